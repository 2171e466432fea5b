package exact_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplan-dev/kplan/internal/exact"
)

func TestOptionsSeeWhatEqualMethodsHide(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		a, b any
	}{
		{"a time in another location", t0, t0.In(time.FixedZone("x", 3600))},
		{"a metav1.Time in another location", &metav1.Time{Time: t0}, &metav1.Time{Time: t0.Local().In(time.FixedZone("y", 7200))}},
		{"a quantity in another form", resource.MustParse("1Gi"), resource.MustParse("1073741824")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if cmp.Equal(tt.a, tt.b) != true {
				t.Fatalf("plain cmp already tells %v and %v apart; the case shows nothing", tt.a, tt.b)
			}
			if cmp.Equal(tt.a, tt.b, exact.Options) {
				t.Errorf("exact.Options says %v equals %v", tt.a, tt.b)
			}
			if !cmp.Equal(tt.a, tt.a, exact.Options) {
				t.Errorf("exact.Options says %v differs from itself", tt.a)
			}
		})
	}
}
