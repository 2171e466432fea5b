package kplan

import corev1 "k8s.io/api/core/v1"

// Reason is a machine-readable reason: an UpperCamelCase word such as
// "MaxUnavailableReached", valid as is as a metav1.Condition's Reason and as an
// event's reason. Every package defines the reasons it returns as constants of this
// type and puts the human sentence in a separate Message.
type Reason string

// Event is something a reconciler records with an event recorder. Every package that
// returns events returns this type.
//
//	recorder.Event(&ev.Object, ev.Type, string(ev.Reason), ev.Message)
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason says what happened.
	Reason Reason
	// Object is what the event is about, with its kind, API version, namespace and
	// name, and its UID when it has one (an object the plan creates has none yet).
	Object corev1.ObjectReference
	// Message is a human-readable description.
	Message string
}

// Action says what a caller does with a desired object. Every package that returns
// desired objects pairs each with an Action; an object that needs no write says so
// with ActionNone rather than being left out or nil.
type Action string

// Actions.
const (
	// ActionNone: the object exists and is up to date; write nothing.
	ActionNone Action = "None"
	// ActionCreate: create the object.
	ActionCreate Action = "Create"
	// ActionUpdate: update the existing object; it carries the resourceVersion that was
	// read, so the write is an optimistic-lock update.
	ActionUpdate Action = "Update"
	// ActionDelete: delete the object.
	ActionDelete Action = "Delete"
)
