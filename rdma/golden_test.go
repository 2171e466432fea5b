package rdma

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the golden file:\n got: %s\nwant: %s", name, got, want)
	}
}

// TestGoldenAnnotations renders the annotations of the rail-optimised node's stories.
func TestGoldenAnnotations(t *testing.T) {
	inv := railNode(t)
	used := new(Used)
	var out bytes.Buffer
	for _, step := range []struct {
		name string
		req  Request
	}{
		{"a storage pod taking the storage NIC and its PCIe switch exclusively", Request{Kind: WholePF, Count: 1, Selector: sel("rdma-type", "storage"), Exclusive: ExclusivePCIe}},
		{"a 4-GPU training pod with one compute NIC per rail, SamePCIe", Request{Kind: WholePF, Count: 4, Selector: sel("rdma-type", "compute"), GPUs: 4, Joint: JointSamePCIe, RailLabel: "rail"}},
		{"a 2-GPU pod, NICs preferred near its GPUs (switch pci0000:17 is exclusive, so GPUs 6 and 7)", Request{Kind: WholePF, Count: 2, Selector: sel("rdma-type", "compute"), GPUs: 2}},
	} {
		a, err := Allocate(inv, used, step.req)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		used.Add(a)
		v, err := EncodeAllocated("", a, CountModel)
		if err != nil {
			t.Fatal(err)
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, []byte(v), "", "  "); err != nil {
			t.Fatal(err)
		}
		out.WriteString("# " + step.name + "\n" + pretty.String() + "\n")
	}
	golden(t, "rail-node-annotations.golden", out.Bytes())
}
