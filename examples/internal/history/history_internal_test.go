package history

import "testing"

func TestRevisionNameFollowsKubernetesHistory(t *testing.T) {
	data := []byte(`{"roles":[]}`)
	one := int32(1)
	a, b := hashRevision(data, nil), hashRevision(data, nil)
	if a != b {
		t.Fatalf("hash not deterministic: %s, %s", a, b)
	}
	if c := hashRevision(data, &one); c == a {
		t.Errorf("the collision count does not change the hash: %s", c)
	}
	if d := hashRevision([]byte(`{"roles":null}`), nil); d == a {
		t.Errorf("other data, same hash %s", d)
	}
	long := string(make([]byte, 300))
	if n := revisionName(long, "h"); len(n) != 225 {
		t.Errorf("name of a long prefix is %d bytes, want 223 + 2", len(n))
	}
}
