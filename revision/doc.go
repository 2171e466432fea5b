// Package revision plans ConfigMapSet planning: configuration versions released independently of images.
//
// It is being built (issue 4); nothing is exported yet.
package revision
