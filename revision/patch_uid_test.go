package revision

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// A patch of a pod deleted and re-created under the same name since it was read must
// be refused by the API server, not give the new pod the old one's revision: the merge
// patch carries the pod's UID as a precondition whenever PodPatch has one.
func TestMergePatchCarriesTheUIDPrecondition(t *testing.T) {
	rev := "abc"
	for _, tc := range []struct {
		name string
		uid  types.UID
		want string
	}{
		{"with a UID the patch names it", "u-1", `{"metadata":{"annotations":{"gone":null,"k":"abc"},"uid":"u-1"}}`},
		{"without a UID the patch has none", "", `{"metadata":{"annotations":{"gone":null,"k":"abc"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PodPatch{Namespace: "ns", Name: "p", UID: tc.uid, Annotations: map[string]*string{"k": &rev, "gone": nil}}
			b, err := p.MergePatch()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(b)); diff != "" {
				t.Errorf("MergePatch (-want +got):\n%s", diff)
			}
			if !json.Valid(b) {
				t.Errorf("MergePatch gave invalid JSON %s", b)
			}
		})
	}
}
