package ranktable

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/kplan-dev/kplan/internal/tmpl"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"sigs.k8s.io/yaml"
)

// Device is one NPU as a pod annotation describes it.
type Device struct {
	// ID is the device id, a non-negative integer in decimal ("0".."15").
	ID string `json:"deviceId"`
	// IP is the device's RoCE IP address.
	IP string `json:"deviceIp"`
	// SuperDeviceID is the device's id inside its super pod (Atlas A3), or "".
	SuperDeviceID string `json:"superDeviceId,omitempty"`
}

// PodData is what a parser extracts from one pod's annotation.
type PodData struct {
	// PodName is the pod's name as the annotation gives it.
	PodName string `json:"podName"`
	// ServerID identifies the server (usually the node IP); devices are grouped by it.
	ServerID string `json:"serverId"`
	// HostIP is the node's IP as the device plugin reports it, or "".
	HostIP string `json:"hostIp,omitempty"`
	// SuperPodID is the super pod the server belongs to (Atlas A3), or "".
	SuperPodID string `json:"superPodId,omitempty"`
	// ServerIndex is the device plugin's server index, or "".
	ServerIndex string `json:"serverIndex,omitempty"`
	// Devices are the pod's NPUs.
	Devices []Device `json:"devices"`
}

// parser turns one annotation value into PodData. Implementations are immutable.
type parser interface {
	parse(annotation string, pod podInfo, scratch *[]byte) (PodData, error)
}

// podInfo is what parser templates learn about the pod besides its annotation, through
// the functions podValues names.
type podInfo struct {
	ip, node, name, namespace string
}

// podValues are the functions parser templates call for the pod's values, in the
// order podInfo.execute passes them.
var podValues = []string{"podIP", "nodeName", "podName", "podNamespace"}

// execute runs a parser template with the pod's values.
func (p podInfo) execute(prog *tmpl.Program, data any, limit int, buf []byte) ([]byte, error) {
	return prog.Execute(data, limit, buf, p.ip, p.node, p.name, p.namespace)
}

// ParseAnnotation decodes one annotation value with t's parser, checks it as Build
// does, and returns it. The error names the annotation but not the pod (the caller
// knows the pod). A parser template's pod functions (podIP, nodeName, podName,
// podNamespace) return "": use ParsePod to give them a pod.
func (t *Template) ParseAnnotation(annotation string) (PodData, error) {
	if t == nil {
		return PodData{}, fmt.Errorf("template is nil")
	}
	return t.parseAnnotation(annotation, podInfo{})
}

// ParsePod decodes the annotation t reads (t.AnnotationName) of pod as
// ParseAnnotation does, with the pod's IP, node name, name and namespace available to
// a parser template as podIP, nodeName, podName and podNamespace. A missing annotation
// is an error, and so is a nil pod or a nil Template.
func (t *Template) ParsePod(pod *corev1.Pod) (PodData, error) {
	if t == nil {
		return PodData{}, fmt.Errorf("template is nil")
	}
	if pod == nil {
		return PodData{}, fmt.Errorf("pod is nil")
	}
	ann, ok := pod.Annotations[t.AnnotationName]
	if !ok {
		return PodData{}, fmt.Errorf("annotation %s: missing", t.AnnotationName)
	}
	return t.parseAnnotation(ann, infoOf(pod))
}

func infoOf(pod *corev1.Pod) podInfo {
	return podInfo{ip: pod.Status.PodIP, node: pod.Spec.NodeName, name: pod.Name, namespace: pod.Namespace}
}

func (t *Template) parseAnnotation(annotation string, pod podInfo) (PodData, error) {
	var scratch []byte
	d, err := parseChecked(t.parser, annotation, pod, &scratch)
	if err != nil {
		return PodData{}, fmt.Errorf("annotation %s: %w", t.AnnotationName, err)
	}
	return d, nil
}

func parseChecked(p parser, annotation string, pod podInfo, scratch *[]byte) (PodData, error) {
	if len(annotation) > apivalidation.TotalAnnotationSizeLimitB {
		return PodData{}, fmt.Errorf("%d bytes exceeds the limit of %d: %w", len(annotation), apivalidation.TotalAnnotationSizeLimitB, ErrOutputTooLarge)
	}
	d, err := p.parse(annotation, pod, scratch)
	if err != nil {
		return PodData{}, err
	}
	if err := validatePodData(&d); err != nil {
		return PodData{}, err
	}
	return d, nil
}

type builtinJSON struct{}

type jsonAnnotation struct {
	PodName  string `json:"pod_name"`
	ServerID string `json:"server_id"`
	Devices  []struct {
		DeviceID string `json:"device_id"`
		DeviceIP string `json:"device_ip"`
	} `json:"devices"`
}

func (builtinJSON) parse(s string, _ podInfo, _ *[]byte) (PodData, error) {
	if d, ok := fastRanktableJSON(s); ok {
		return d, nil
	}
	return decodeRanktableJSON(s)
}

// decodeRanktableJSON is builtinJSON.parse through encoding/json.
func decodeRanktableJSON(s string) (PodData, error) {
	var a jsonAnnotation
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return PodData{}, fmt.Errorf("not the ranktable JSON: %w", err)
	}
	d := PodData{PodName: a.PodName, ServerID: a.ServerID, Devices: make([]Device, len(a.Devices))}
	for i, v := range a.Devices {
		d.Devices[i] = Device{ID: v.DeviceID, IP: v.DeviceIP}
	}
	return d, nil
}

type builtinDevicePlugin struct{}

// flexString accepts a JSON string or number (device plugins differ in which they
// write for ids and indexes).
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexString(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want a string or a number, got %s", truncate(string(b), 32))
	}
	*f = flexString(n.String())
	return nil
}

type devicePluginAnnotation struct {
	PodName     string     `json:"pod_name"`
	ServerID    string     `json:"server_id"`
	HostIP      string     `json:"host_ip"`
	ServerIP    string     `json:"server_ip"`
	SuperPodID  flexString `json:"super_pod_id"`
	RackID      flexString `json:"rack_id"`
	ServerIndex flexString `json:"server_index"`
	Devices     []struct {
		DeviceID      flexString `json:"device_id"`
		DeviceIP      string     `json:"device_ip"`
		SuperDeviceID flexString `json:"super_device_id"`
	} `json:"devices"`
}

func (builtinDevicePlugin) parse(s string, _ podInfo, _ *[]byte) (PodData, error) {
	var a devicePluginAnnotation
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return PodData{}, fmt.Errorf("not the device plugin JSON: %w", err)
	}
	d := PodData{
		PodName: a.PodName, ServerID: a.ServerID, HostIP: orDefault(a.HostIP, a.ServerIP),
		SuperPodID: string(a.SuperPodID), ServerIndex: string(a.ServerIndex),
		Devices: make([]Device, len(a.Devices)),
	}
	for i, v := range a.Devices {
		d.Devices[i] = Device{ID: string(v.DeviceID), IP: v.DeviceIP, SuperDeviceID: string(v.SuperDeviceID)}
	}
	return d, nil
}

// templateParser runs a parser template on the annotation string and decodes the
// YAML it prints.
type templateParser struct {
	name string
	tmpl *tmpl.Program
}

func (p *templateParser) parse(s string, pod podInfo, scratch *[]byte) (PodData, error) {
	out, err := pod.execute(p.tmpl, s, apivalidation.TotalAnnotationSizeLimitB, *scratch)
	if err != nil {
		return PodData{}, fmt.Errorf("parser template %s: %w", p.name, err)
	}
	*scratch = out
	d, err := decodeParserOutput(out)
	if err != nil {
		return PodData{}, fmt.Errorf("parser template %s: %w", p.name, err)
	}
	return d, nil
}

// decodeParserOutput decodes the YAML a parser template prints: podName, serverId,
// hostIp, superPodId, serverIndex and devices [{deviceId, deviceIp, superDeviceId}].
// Unknown keys are errors. Simple documents (one key per line, plain or double-quoted
// scalars without escapes) take a fast path whose result equals the YAML decoder's.
func decodeParserOutput(b []byte) (PodData, error) {
	if d, ok := fastDecode(b); ok {
		return d, nil
	}
	var d PodData
	if err := yaml.UnmarshalStrict(bytes.Clone(b), &d); err != nil {
		return PodData{}, fmt.Errorf("output is not the parser YAML: %w", err)
	}
	return d, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
