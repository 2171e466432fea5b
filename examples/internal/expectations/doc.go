// Package expectations is Kubernetes' controller expectations for the example
// ModelServing controller: a reconcile plans only once the cache has caught up with
// the controller's own writes (pods created, deleted, or updated in place), so a
// lagging cache never makes it create or delete twice. It makes no kplan call.
package expectations
