// Package manifest reads Kubernetes objects the way `kubectl get -o yaml` (or -o json)
// prints them: one object, a v1 List of objects, or several YAML documents separated by
// "---" lines. Every object remembers where it came from, so every error names the
// file, the document (and list item) and the object, on one line.
package manifest
