package v1alpha1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"

	servingv1 "github.com/kplan-dev/kplan/examples/api/serving/v1alpha1"
)

func TestLatestRatioFromPartition(t *testing.T) {
	str := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(i int) *intstr.IntOrString { v := intstr.FromInt(i); return &v }
	for _, tc := range []struct {
		name      string
		partition *intstr.IntOrString
		unit      int
		want      *intstr.IntOrString
		wantErr   bool
	}{
		{"no partition moves all", nil, 2, nil, false},
		{"one of three groups kept, two pods a group", num(1), 2, num(4), false},
		{"every group kept", num(3), 1, num(0), false},
		{"more groups kept than exist", num(5), 1, num(0), false},
		{"a percent kept", str("25%"), 1, str("75%"), false},
		{"a fractional percent kept", str("12.5%"), 1, str("87.5%"), false},
		{"everything kept", str("100%"), 1, str("0%"), false},
		{"not a percent", str("half"), 1, nil, true},
		{"negative percent", str("-5%"), 1, nil, true},
		{"negative integer", num(-1), 1, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := servingv1.LatestRatio(tc.partition, 3, tc.unit)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LatestRatio (-want +got):\n%s", diff)
			}
		})
	}
}
