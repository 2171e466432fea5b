// Package rollout plans rolling, gang and group rolling updates, rollback and recover of abstract replicas.
//
// It is being built (issue 3); nothing is exported yet.
package rollout
