// Package inplace is the example ModelServing controller's in-place updates. A
// pod whose revision changes only in container images and in what the resize
// subresource can change (cpu and memory requests and limits; see resize.go)
// keeps its name and UID: the controller sets its readiness gate
// servingv1.PodConditionImagesReady False, resizes it (when resources change),
// then patches the images, the revision label and
// servingv1.AnnotationInPlaceUpdate; the kubelet restarts the changed
// containers and resizes the others. Once every changed container reports the
// new image (or another image ID than before) and resources and is ready, the
// controller sets the gate True and the kubelet reports the pod ready again.
// Until then the controller reads the pod as not ready, whatever its Ready
// condition still says, so the step's availability budget covers the update as
// it covers a recreate. A resize the API server refuses, or the node reports
// Infeasible (or defers for five minutes), recreates the pod instead
// (ResizeBlocked).
//
// It makes no kplan call: package rollout decides which pods move; this package
// moves them.
package inplace
