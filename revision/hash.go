package revision

import (
	"fmt"
	"maps"

	"github.com/kplan-dev/kplan/internal/canonhash"
)

// revisionNameLength is the number of lowercase hex digits in a revision name.
const revisionNameLength = 16

// hashDomain separates revision hashes from every other canonical hash in kplan.
const hashDomain = "kplan.dev/configmapset-revision/v1"

// hashFunc names a revision from its data and collision count. Production code uses
// RevisionHash; tests pass a weaker one to force collisions.
type hashFunc func(data map[string]string, collisionCount int32) string

// RevisionHash returns the name of the revision holding data: the first 16 lowercase
// hex digits of the SHA-256 of a canonical encoding of data (every key and value
// length-prefixed, keys in order, so no two different maps encode alike) and, when it
// is above zero, of the collision count.
func RevisionHash(data map[string]string, collisionCount int32) string {
	h := canonhash.New().String(hashDomain).StringMap(data)
	if collisionCount > 0 {
		h.Uint64(uint64(collisionCount))
	}
	return h.Hex(revisionNameLength)
}

// AddResult is what Hub.Add did.
type AddResult struct {
	// Hub is the new hub; the receiver is not changed.
	Hub Hub
	// Name is the revision holding the data.
	Name string
	// CollisionCount is the collision count to store in the status (never lower than
	// the one given).
	CollisionCount int32
	// Created is true when the data was not in the hub.
	Created bool
	// Moved is true when the data was an older revision, now moved to newest.
	Moved bool
}

// Add makes data the newest revision. Data equal to a revision already in the hub
// moves that revision to newest under its existing name (whatever collision count it
// was hashed with). Otherwise the data is hashed with collisionCount; while the name
// is taken by different data the count is bumped and the data rehashed. A file name
// that is not a valid ConfigMap key is an error. The receiver
// and data are not changed.
func (h Hub) Add(data map[string]string, collisionCount int32) (AddResult, error) {
	return h.add(data, collisionCount, RevisionHash)
}

func (h Hub) add(data map[string]string, collisionCount int32, hash hashFunc) (AddResult, error) {
	if err := checkFileNames(data); err != nil {
		return AddResult{}, fmt.Errorf("data%w", err)
	}
	if collisionCount < 0 {
		collisionCount = 0
	}
	for i, r := range h.Revisions {
		if maps.Equal(r.Data, data) {
			res := AddResult{Name: r.Name, CollisionCount: collisionCount}
			if i == len(h.Revisions)-1 {
				res.Hub = h
				return res, nil
			}
			revs := make([]Revision, 0, len(h.Revisions))
			revs = append(revs, h.Revisions[:i]...)
			revs = append(revs, h.Revisions[i+1:]...)
			res.Hub = Hub{Revisions: append(revs, r)}
			res.Moved = true
			return res, nil
		}
	}
	// Every bump moves past one entry holding different data, so len+1 tries suffice
	// unless the hash function itself is broken.
	for try := 0; try <= len(h.Revisions)+1; try++ {
		name := hash(data, collisionCount)
		if h.Index(name) >= 0 {
			collisionCount++
			continue
		}
		revs := make([]Revision, 0, len(h.Revisions)+1)
		revs = append(revs, h.Revisions...)
		files := maps.Clone(data)
		if files == nil {
			files = map[string]string{}
		}
		revs = append(revs, Revision{Name: name, Data: files})
		return AddResult{Hub: Hub{Revisions: revs}, Name: name, CollisionCount: collisionCount, Created: true}, nil
	}
	return AddResult{}, errCollisions(collisionCount)
}
