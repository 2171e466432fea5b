// Package exact holds the go-cmp options kplan's tests compare API objects with.
//
// Left to itself cmp calls Equal methods, so times compare by instant
// ((*metav1.Time).Equal, time.Time.Equal) and quantities by value (Quantity.Equal).
// With [Options] a time's location or monotonic reading and a quantity's form or cached
// string count too, which makes cmp.Diff as strict as reflect.DeepEqual: a purity,
// determinism or "pod unchanged" check still sees every write.
package exact

import (
	"reflect"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Options makes cmp.Diff as strict as reflect.DeepEqual on API objects.
var Options = cmp.Options{
	cmp.Comparer(func(a, b time.Time) bool { return a == b }),
	cmp.Comparer(func(a, b *metav1.Time) bool { return a == b || a != nil && b != nil && a.Time == b.Time }),
	cmp.Comparer(func(a, b resource.Quantity) bool { return reflect.DeepEqual(a, b) }),
}
