package operator

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kplan-dev/kplan/revision"
)

func TestMergePatchWithUID(t *testing.T) {
	rev := "abc"
	p := revision.PodPatch{Namespace: "ns", Name: "p", UID: types.UID("u-1"), Annotations: map[string]*string{"k": &rev, "gone": nil}}
	b, err := mergePatchWithUID(p)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata struct {
			UID         string             `json:"uid"`
			Annotations map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Metadata.UID != "u-1" || got.Metadata.Annotations["k"] == nil || *got.Metadata.Annotations["k"] != "abc" {
		t.Errorf("patch %s, want uid u-1 and k=abc", b)
	}
	if v, ok := got.Metadata.Annotations["gone"]; !ok || v != nil {
		t.Errorf("patch %s, want gone: null (removal kept)", b)
	}
	p.UID = ""
	b, err = mergePatchWithUID(p)
	if want, _ := p.MergePatch(); err != nil || string(b) != string(want) {
		t.Errorf("without a UID got %s (%v), want MergePatch's %s", b, err, want)
	}
}
