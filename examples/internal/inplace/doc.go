// Package inplace is the example ModelServing controller's in-place image updates.
// A pod whose revision changes only in container images (the two revisions'
// templates, as the ControllerRevisions hold them, are equal but for containers'
// images) keeps its name and UID: the controller sets its readiness gate
// servingv1.PodConditionImagesReady False, then patches the images, the revision
// label and servingv1.AnnotationInPlaceUpdate; the kubelet restarts the changed
// containers. Once every changed container reports the new image (or another image
// ID than before) and is ready, the controller sets the gate True and the kubelet
// reports the pod ready again. Until then the controller reads the pod as not
// ready, whatever its Ready condition still says, so the step's availability budget
// covers the update as it covers a recreate.
//
// It makes no kplan call: package rollout decides which pods move; this package
// moves them.
package inplace
