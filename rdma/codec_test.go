package rdma

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
)

func TestEncodeAllocated(t *testing.T) {
	inv := mustInv(t, "n1", nic(0, "0000:01:00.0", "pci0000:00", 0, nil, "0000:01:00.2", "0000:01:00.3"))
	a, err := Allocate(inv, nil, Request{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	existing := `{"gpu":[{"minor":1,"resources":{"koordinator.sh/gpu-core":"100"}}], "fpga":[ {"minor":0} ]}`
	got, err := EncodeAllocated(existing, a, CountModel)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"fpga":[{"minor":0}],"gpu":[{"minor":1,"resources":{"koordinator.sh/gpu-core":"100"}}],` +
		`"rdma":[{"minor":0,"resources":{"koordinator.sh/rdma":"1"},"id":"0000:01:00.0","extension":{"vfs":[{"minor":-1,"busID":"0000:01:00.2"}]},"busID":"0000:01:00.0"}]}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestDecodeAllocated(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		pf       string // expected PF BDF of rdma[0]; "" when none
		err      string
	}{
		{"the design's form (busID) decodes", `{"rdma":[{"minor":0,"resources":{"koordinator.sh/rdma":"1"},"extension":{"vfs":[{"minor":-1,"busID":"0000:01:00.2"}]},"busID":"0000:01:00.0"}]}`, "0000:01:00.0", ""},
		{"upstream's form (id) decodes", `{"rdma":[{"minor":0,"id":"0000:01:00.0"}]}`, "0000:01:00.0", ""},
		{"an entry with neither is known by minor", `{"rdma":[{"minor":3}]}`, "", ""},
		{"malformed JSON names the annotation", `{"rdma":[`, "", "annotation scheduling.koordinator.sh/device-allocated: unexpected end of JSON input"},
		{"a bad VF address names the field", `{"rdma":[{"minor":0,"extension":{"vfs":[{"minor":-1,"busID":"01:00.2"}]}}]}`, "", "annotation scheduling.koordinator.sh/device-allocated: rdma[0].extension.vfs[0].busID: \"01:00.2\" is not a PCI address"},
		{"an id-only entry with a malformed address is rejected", `{"rdma":[{"minor":0,"id":"0000:18:00.9"}]}`, "", "rdma[0].id: \"0000:18:00.9\" is not a PCI address"},
		{"an id that is not an address is left to busID", `{"rdma":[{"minor":0,"id":"mlx5_0","busID":"0000:01:00.0"}]}`, "0000:01:00.0", ""},
		{"id and busID that disagree are rejected", `{"rdma":[{"minor":0,"id":"0000:01:00.1","busID":"0000:01:00.0"}]}`, "", "rdma[0].id:"},
		{"a wrongly typed rdma list is rejected", `{"rdma":{"minor":0}}`, "", "rdma: json: cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := DecodeAllocated(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v\nwant %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, ok := EntryPF(a.RDMA[0])
			if (tc.pf == "") == ok || (ok && b.String() != tc.pf) {
				t.Fatalf("PF %v %v want %q", b, ok, tc.pf)
			}
		})
	}
}

func TestPercentModelEncodesWholePFsAsHundred(t *testing.T) {
	inv := mustInv(t, "n1", nic(0, "0000:01:00.0", "r", 0, nil))
	a, err := Allocate(inv, nil, Request{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	e := Entries(a, PercentModel)
	q := e[0].Resources[ResourceRDMA]
	if q.Value() != 100 || e[0].Extension != nil {
		t.Fatalf("got %+v", e)
	}
}

func FuzzDecodeAllocated(f *testing.F) {
	for _, s := range []string{
		`{"rdma":[{"minor":0,"resources":{"koordinator.sh/rdma":"1"},"extension":{"vfs":[{"minor":-1,"busID":"0000:01:00.2"}]},"busID":"0000:01:00.0"}]}`,
		`{"rdma":[{"minor":0,"id":"0000:01:00.0"}],"gpu":[{"minor":1}]}`,
		`{"fpga":[{"minor":0}],"rdma":null}`, `{}`, ``, `[`, `{"rdma":[{"minor":0,"busID":"0000:01:00.8"}]}`,
		`{"rdma":[{"minor":0,"id":"0000:18:00.9"}]}`, `{"rdma":[{"minor":0,"id":"mlx5_0"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := DecodeAllocated(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "annotation "+AnnotationDeviceAllocated+": ") {
				t.Fatalf("error does not name the annotation: %v", err)
			}
			return
		}
		// Every address an entry carries was checked: it resolves to its PF.
		for i, d := range a.RDMA {
			if _, ok := EntryPF(d); !ok && (d.BusID != "" || looksLikeBDF(d.ID)) {
				t.Fatalf("rdma[%d] decoded with an unusable address: id %q busID %q", i, d.ID, d.BusID)
			}
		}
		out, err := a.Encode()
		if err != nil {
			if len(s) > apivalidation.TotalAnnotationSizeLimitB/2 {
				return
			}
			t.Fatal(err)
		}
		b, err := DecodeAllocated(out)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", out, err)
		}
		out2, err := b.Encode()
		if err != nil || out2 != out {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
		for k, v := range a.Other {
			if !json.Valid(b.Other[k]) {
				t.Fatalf("type %s re-decoded as invalid JSON: %s -> %s", k, v, b.Other[k])
			}
			if diff := cmp.Diff(compact(t, v), compact(t, b.Other[k])); diff != "" {
				t.Fatalf("type %s changed (-first +re-decoded):\n%s", k, diff)
			}
		}
	})
}

func compact(t *testing.T, m json.RawMessage) string {
	var v any
	if err := json.Unmarshal(m, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// A GPU plugin wrote its shares first; the RDMA allocation placed relative to those
// GPUs (WithGPUs) must keep them exactly, and refuse to encode over other GPUs.
func TestEncodeAllocatedKeepsTheGPUPluginsEntries(t *testing.T) {
	inv := bigNode(t, 4, 2, 2, 0)
	a, err := Allocate(inv, nil, Request{Kind: WholePF, Count: 1, WithGPUs: []int32{0}})
	if err != nil {
		t.Fatal(err)
	}
	shared := `{"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"50","koordinator.sh/gpu-memory":"8Gi"}}]}`
	got, err := EncodeAllocated(shared, a, CountModel)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, `"gpu":[{"minor":0,"resources":{"koordinator.sh/gpu-core":"50","koordinator.sh/gpu-memory":"8Gi"}}]`) {
		t.Errorf("the GPU plugin's shares were rewritten: %s", got)
	}
	if dec, err := DecodeAllocated(got); err != nil || len(dec.RDMA) != 1 {
		t.Errorf("rdma entries %+v, %v", dec.RDMA, err)
	}

	other := `{"gpu":[{"minor":3,"resources":{"koordinator.sh/gpu-core":"100"}}]}`
	if _, err := EncodeAllocated(other, a, CountModel); err == nil || !strings.Contains(err.Error(), "gpu: the annotation holds GPUs [3], the allocation [0]") {
		t.Errorf("err = %v, want the GPU mismatch named", err)
	}

	t.Run("GPUs chosen jointly are written whole when no GPU plugin wrote any", func(t *testing.T) {
		a, err := Allocate(inv, nil, Request{Kind: WholePF, Count: 1, GPUs: 1})
		if err != nil {
			t.Fatal(err)
		}
		got, err := EncodeAllocated("", a, CountModel)
		if err != nil {
			t.Fatal(err)
		}
		dec, _ := DecodeAllocated(got)
		if m, err := dec.GPUMinors(); err != nil || len(m) != 1 || !strings.Contains(got, `"koordinator.sh/gpu-core":"100"`) {
			t.Errorf("gpu list %v %v in %s", m, err, got)
		}
	})
}

// An rdma entry that is null or has no minor used to decode as PF 0 held whole.
func TestDecodeAllocatedRejectsNullAndMinorlessEntries(t *testing.T) {
	for value, want := range map[string]string{
		`{"rdma":[null]}`:                   "rdma[0]: null",
		`{"rdma":[{}]}`:                     "rdma[0].minor: required",
		`{"rdma":[{"minor":0},{"id":"x"}]}`: "rdma[1].minor: required",
		`{"rdma":[{"minor":null}]}`:         "rdma[0].minor: required",
		`{"rdma":[{"minor":"0"}]}`:          "rdma[0]: json: cannot unmarshal string",
		`{"rdma":{"minor":0}}`:              "rdma: json: cannot unmarshal object",
	} {
		_, err := DecodeAllocated(value)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", value, err, want)
		}
		inv := twoRootNode(t)
		if _, err := UsedByPods(inv, []*corev1.Pod{pod("p", map[string]string{AnnotationDeviceAllocated: value}, 0)}); err == nil {
			t.Errorf("%s: UsedByPods accepted it", value)
		}
	}
	a, err := DecodeAllocated(`{"rdma":[{"minor":0}],"gpu":[null]}`)
	if err != nil || len(a.RDMA) != 1 || a.RDMA[0].Minor != 0 {
		t.Fatalf("a PF by minor 0: %+v, %v", a, err)
	}
}

// TestEncodeAllocatedRefusesAnUnknownModel: a misspelt model must not write a whole
// PF as 1 where Percent means 100.
func TestEncodeAllocatedRefusesAnUnknownModel(t *testing.T) {
	_, err := EncodeAllocated("", Allocation{}, CapacityModel("percent"))
	if err == nil || !strings.Contains(err.Error(), `"percent" is not Count or Percent`) {
		t.Fatalf("EncodeAllocated with model \"percent\": %v", err)
	}
}
