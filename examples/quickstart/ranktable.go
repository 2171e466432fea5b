package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplan-dev/kplan/ranktable"
)

// This file holds the ranktable section: the design's scenario and its ConfigMap table.

// designOwner is the design's ModelServing.
var designOwner = ranktable.Owner{
	ObjectMeta: metav1.ObjectMeta{Name: "qwen-inference", Namespace: "default", UID: "uid-qwen-inference"},
	GVK:        schema.GroupVersionKind{Group: "workload.kthena.io", Version: "v1alpha1", Kind: "ModelServing"},
}

// designPod is worker i of the design's scenario: server 192.168.1.1{0+i}, 8 NPUs with
// device IPs 10.20.0.{2+8i}..; annotated is whether the device plugin has written its
// ascend.com/ranktable annotation yet.
func designPod(i int, annotated bool) *corev1.Pod {
	name := fmt.Sprintf("qwen-inference-worker-%d", i)
	controller := true
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			Labels: map[string]string{ranktable.LabelRole: "worker"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: designOwner.GVK.GroupVersion().String(), Kind: designOwner.GVK.Kind,
				Name: designOwner.Name, UID: designOwner.UID, Controller: &controller,
			}},
			CreationTimestamp: metav1.NewTime(now),
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "inference", Image: "mindie:2.0"}}},
	}
	if annotated {
		type device struct {
			ID string `json:"device_id"`
			IP string `json:"device_ip"`
		}
		ann := struct {
			PodName  string   `json:"pod_name"`
			ServerID string   `json:"server_id"`
			Devices  []device `json:"devices"`
		}{PodName: name, ServerID: fmt.Sprintf("192.168.1.%d", 10+i)}
		for d := range 8 {
			ann.Devices = append(ann.Devices, device{ID: fmt.Sprint(d), IP: fmt.Sprintf("10.20.0.%d", 2+8*i+d)})
		}
		b, _ := json.Marshal(ann)
		pod.Annotations = map[string]string{ranktable.DefaultAnnotationName: string(b)}
	}
	return pod
}

func rankTable(w io.Writer) error {
	// The owner's kthena.io/ranktable-template annotation names a template; this one
	// ships with the library (MindIE, one table per role replica).
	tmpl, err := ranktable.LoadLibraryTemplate(ranktable.LibraryMindIERole, ranktable.LoadOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "template %s: engine %s, level %s, parser %s, file %s/%s\n\n",
		tmpl.Name, tmpl.Engine, tmpl.Level, tmpl.ParserName, tmpl.MountPath, tmpl.Filename)

	// The design's pods carry a role label and no serving-group label: the owner is
	// one serving group.
	in := ranktable.Input{
		Owner: designOwner, Template: tmpl, Now: now, Timeout: 10 * time.Minute,
		Grouping: ranktable.Grouping{SingleGroup: true},
		Expected: map[ranktable.GroupKey]int{{Role: "worker"}: 2},
		Pods:     []*corev1.Pod{designPod(0, true), designPod(1, false)},
	}
	fmt.Fprintln(w, "reconcile 1: worker-0 is annotated, worker-1 is not yet")
	res, err := ranktable.Plan(in)
	if err != nil {
		return err
	}
	printRankTable(w, res)

	// The reconciler wrote the ConfigMap; the next reconcile reads it back.
	in.ConfigMaps = []*corev1.ConfigMap{res.ConfigMaps[0].ConfigMap}
	in.Pods = []*corev1.Pod{designPod(0, true), designPod(1, true)}
	fmt.Fprintln(w, "\nreconcile 2: both pods are annotated")
	res, err = ranktable.Plan(in)
	if err != nil {
		return err
	}
	printRankTable(w, res)
	cm := res.ConfigMaps[0].ConfigMap
	fmt.Fprintf(w, "\nConfigMap %s/%s data[%s] (servers in order, rank ids 0..15):\n",
		cm.Namespace, cm.Name, tmpl.Filename)
	table, err := compactTable(cm.Data[tmpl.Filename])
	if err != nil {
		return err
	}
	fmt.Fprint(w, table)

	in.ConfigMaps = []*corev1.ConfigMap{cm}
	in.Pods = in.Pods[:1]
	fmt.Fprintln(w, "\nreconcile 3: worker-1 was deleted")
	res, err = ranktable.Plan(in)
	if err != nil {
		return err
	}
	printRankTable(w, res)
	return nil
}

func printRankTable(w io.Writer, res ranktable.Result) {
	for _, g := range res.Groups {
		fmt.Fprintf(w, "  group %s: %s, %d of %d pods", groupName(g.Group), g.Phase, g.Pods, g.Expected)
		if len(g.Missing) > 0 {
			fmt.Fprintf(w, ", waiting for the annotation of %s", strings.Join(g.Missing, ", "))
		}
		fmt.Fprintf(w, " (%s)\n", g.Reason)
	}
	for _, c := range res.ConfigMaps {
		fmt.Fprintf(w, "  ConfigMap %s: %s (%d bytes of table)\n", c.ConfigMap.Name, c.Action, len(c.ConfigMap.Data[ranktable.DefaultFilename]))
	}
	for _, e := range res.Events {
		fmt.Fprintf(w, "  event %s %s on %s %s\n", e.Type, e.Reason, e.Object.Kind, e.Object.Namespace+"/"+e.Object.Name)
	}
	if res.RequeueAfter > 0 {
		fmt.Fprintf(w, "  requeue after %s\n", res.RequeueAfter)
	}
}

// groupName names a ranktable group: serving group and role.
func groupName(k ranktable.GroupKey) string {
	switch {
	case k.Group == "":
		return "role " + k.Role
	case k.Role == "":
		return k.Group
	}
	return k.Group + " role " + k.Role
}

// compactTable prints one line per server with its devices as id=ip:rank.
func compactTable(data string) (string, error) {
	var t struct {
		Version     string `json:"version"`
		ServerCount string `json:"server_count"`
		Status      string `json:"status"`
		Servers     []struct {
			ServerID string `json:"server_id"`
			Devices  []struct {
				ID     string `json:"device_id"`
				IP     string `json:"device_ip"`
				RankID string `json:"rank_id"`
			} `json:"device"`
		} `json:"server_list"`
	}
	if err := json.Unmarshal([]byte(data), &t); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  version %s, server_count %s, status %s\n", t.Version, t.ServerCount, t.Status)
	for _, s := range t.Servers {
		fmt.Fprintf(&b, "  server %s:\n", s.ServerID)
		for i, d := range s.Devices {
			if i%4 == 0 {
				b.WriteString("   ")
			}
			fmt.Fprintf(&b, " device %s %-10s rank %-2s", d.ID, d.IP, d.RankID)
			if i%4 == 3 || i == len(s.Devices)-1 {
				trimmed := strings.TrimRight(b.String(), " ")
				b.Reset()
				b.WriteString(trimmed + "\n")
			}
		}
	}
	return b.String(), nil
}
