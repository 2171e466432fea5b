package owners_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplan-dev/kplan/examples/internal/owners"
)

// The ranktable grouping and rank order of a LeaderWorkerSet's pods.
func ExampleFor() {
	p, ok := owners.For(schema.FromAPIVersionAndKind("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"))
	fmt.Println(ok)
	fmt.Println("owner:", p.Grouping.OwnerLabel)
	fmt.Println("group:", p.Grouping.GroupLabel)
	fmt.Println("order:", p.Order, "by", p.MemberIndexLabel)
	// Output:
	// true
	// owner: leaderworkerset.sigs.k8s.io/name
	// group: leaderworkerset.sigs.k8s.io/group-index
	// order: PodIndex by leaderworkerset.sigs.k8s.io/worker-index
}
