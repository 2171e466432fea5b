package rdma

import (
	"encoding/json"
	"strings"
	"testing"
)

// koordinator's Device CRD requires spec.devices[].health, so an unhealthy device
// encoded from these types must still carry it: with omitempty the API server
// rejected every Device object holding one.
func TestUnhealthyDeviceEncodesHealthFalse(t *testing.T) {
	minor := int32(0)
	for _, tc := range []struct {
		name   string
		health bool
		want   string
	}{
		{"a healthy device", true, `"health":true`},
		{"an unhealthy device", false, `"health":false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(DeviceInfo{Minor: &minor, Type: RDMA, Health: tc.health})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tc.want) {
				t.Errorf("encoded %s, want it to contain %s", b, tc.want)
			}
		})
	}
}
