// Package history is the small part of Kubernetes' controller history
// (pkg/controller/history) the example ModelServing controller needs: a revision is
// a ControllerRevision holding the roles' pod templates, named <owner>-<hash> where
// the hash covers the data and the collision count; revisions are ordered by their
// Revision number, and rolling back to an old template renumbers its revision as the
// newest instead of creating a copy. It makes no kplan call: the controller hands
// the revision names to package rollout as its history.
package history
