package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// Limits on the input of one Read (every file and stdin together) or one Parse. They
// are checked before the memory is allocated: the bytes before a file is read, the
// nodes of a document before it is decoded, the items of a List before they are
// split into objects. A YAML document takes hundreds of bytes of memory per node
// while it is decoded, so MaxNodes, not MaxBytes, bounds the memory of hostile input.
const (
	// MaxBytes is the most bytes read from all inputs together.
	MaxBytes = 64 << 20
	// MaxObjects is the most objects read from all inputs together.
	MaxObjects = 100000
	// MaxNodes is the most YAML or JSON nodes of all inputs together, as counted by
	// their indicators ("key: ", "- ", ',', '[' and '{'): about 5000 pods as
	// "kubectl get -o yaml" prints them.
	MaxNodes = 2000000
)

// budget is what is left of the limits while inputs are read.
type budget struct{ bytes, objects, nodes int }

func fullBudget() *budget { return &budget{MaxBytes, MaxObjects, MaxNodes} }

var kindRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

// Parse reads every object of one manifest. source names it in errors.
// Empty documents (only comments or whitespace) are skipped but keep their number.
// Lists ("kind: List" or any kind ending in "List" with items) are expanded into
// their items. The limits (MaxBytes, MaxObjects, MaxNodes) apply to data.
func Parse(source string, data []byte) ([]Object, error) {
	return parse(source, data, fullBudget())
}

func parse(source string, data []byte, b *budget) ([]Object, error) {
	if len(data) > b.bytes {
		return nil, fmt.Errorf("%s: more than the %d bytes left of the limit of %d for all inputs together", source, b.bytes, MaxBytes)
	}
	b.bytes -= len(data)
	var objs []Object
	err := documents(source, data, func(doc int, raw []byte) error {
		if blank(raw) {
			return nil
		}
		n := countNodes(raw)
		if n > b.nodes {
			return fmt.Errorf("%s: document %d: about %d YAML nodes, more than the %d left of the limit of %d for all inputs together", source, doc, n, b.nodes, MaxNodes)
		}
		b.nodes -= n
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return fmt.Errorf("%s: document %d: not valid YAML: %s", source, doc, OneLine(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")))
		}
		js = bytes.TrimSpace(js)
		if len(js) == 0 || string(js) == "null" {
			return nil
		}
		o := Object{Source: source, Doc: doc}
		items, err := header(&o, js, true, b.objects)
		if err != nil {
			return err
		}
		if items == nil {
			if b.objects == 0 {
				return fmt.Errorf("%s: more than %d objects in all inputs together", o.Where(), MaxObjects)
			}
			b.objects--
			objs = append(objs, o)
		}
		b.objects -= len(items)
		for i, item := range items {
			it := Object{Source: source, Doc: doc, Item: i + 1}
			if _, err := header(&it, item, false, 0); err != nil {
				return err
			}
			objs = append(objs, it)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return objs, nil
}

// documents calls yield with every document of a YAML stream and its 1-based number,
// counted as YAML counts them: text before the first "---" line is a document only
// when it holds more than comments, directives and blank lines, and every "---" line
// starts the next document, so an empty document between two "---" lines keeps its
// number. A "---" line may carry a comment but no content.
func documents(source string, data []byte, yield func(doc int, raw []byte) error) error {
	doc, start, separated := 0, 0, false
	emit := func(end int) error {
		chunk := data[start:end]
		if !separated && blank(chunk) {
			return nil // comments before the first "---" are no document
		}
		doc++
		return yield(doc, chunk)
	}
	for i := 0; i < len(data); {
		end, next := len(data), len(data)
		if nl := bytes.IndexByte(data[i:], '\n'); nl >= 0 {
			end, next = i+nl, i+nl+1
		}
		if rest, ok := bytes.CutPrefix(data[i:end], []byte("---")); ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r') {
			if err := emit(i); err != nil {
				return err
			}
			separated = true
			if t := bytes.TrimSpace(rest); len(t) > 0 && t[0] != '#' {
				return fmt.Errorf("%s: document %d: content after the --- separator is not supported: %s", source, doc+1, quote(string(t)))
			}
			start = next
		}
		i = next
	}
	return emit(len(data))
}

// blank reports whether chunk holds only blank lines, comments and directives.
func blank(chunk []byte) bool {
	for len(chunk) > 0 {
		line := chunk
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			line, chunk = chunk[:i], chunk[i+1:]
		} else {
			chunk = nil
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && t[0] != '%' {
			return false
		}
	}
	return true
}

// countNodes counts the node indicators of a YAML or JSON document without
// allocating: "key: " or "key:" at a line end (a mapping entry), "- " or "-" at a line
// end (a sequence entry), ',', '[' and '{'; plus one for the document. It also counts
// indicators inside quoted and block strings, so it errs on the high side.
func countNodes(raw []byte) int {
	n := 1
	for i, c := range raw {
		switch c {
		case ',', '[', '{':
			n++
		case ':', '-':
			if i+1 == len(raw) || raw[i+1] == ' ' || raw[i+1] == '\n' || raw[i+1] == '\t' || raw[i+1] == '\r' {
				n++
			}
		}
	}
	return n
}

// header fills o's identity from js and returns a list's items (nil, and an error, for
// a list when lists are not allowed).
//
// maxItems bounds a list's items: more is an error before they are split.
func header(o *Object, js []byte, allowList bool, maxItems int) ([]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(js, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("%s: not an object (a Kubernetes manifest is a mapping with apiVersion, kind and metadata)", o.Where())
	}
	var err error
	if o.Kind, err = stringField(fields, "kind"); err != nil {
		return nil, fmt.Errorf("%s: %v", o.Where(), err)
	}
	if o.APIVersion, err = stringField(fields, "apiVersion"); err != nil {
		return nil, fmt.Errorf("%s: %v", o.Where(), err)
	}
	switch {
	case o.Kind == "":
		return nil, fmt.Errorf("%s: kind is missing", o.Where())
	case !kindRE.MatchString(o.Kind):
		return nil, fmt.Errorf("%s: kind %s is not a kind (letters and digits, starting with a letter)", o.Where(), quote(o.Kind))
	case o.APIVersion == "":
		return nil, fmt.Errorf("%s: apiVersion of the %s is missing", o.Where(), o.Kind)
	case !printable(o.APIVersion) || strings.ContainsAny(o.APIVersion, " \t"):
		return nil, fmt.Errorf("%s: apiVersion %s of the %s is not an API version", o.Where(), quote(o.APIVersion), o.Kind)
	}
	if items, ok := fields["items"]; ok && (o.Kind == "List" || strings.HasSuffix(o.Kind, "List")) {
		if !allowList {
			return nil, fmt.Errorf("%s: a %s inside a list is not supported", o.Where(), o.Kind)
		}
		if n, err := countItems(items); err != nil {
			return nil, fmt.Errorf("%s: items of the %s is not a list", o.Where(), o.Kind)
		} else if n > maxItems {
			return nil, fmt.Errorf("%s: the %s has %d items, more than the %d objects left of the limit of %d for all inputs together", o.Where(), o.Kind, n, maxItems, MaxObjects)
		}
		var list []json.RawMessage
		if err := json.Unmarshal(items, &list); err != nil {
			return nil, fmt.Errorf("%s: items of the %s is not a list", o.Where(), o.Kind)
		}
		if list == nil {
			list = []json.RawMessage{}
		}
		return list, nil
	}
	if o.Kind == "List" {
		return nil, fmt.Errorf("%s: the List has no items", o.Where())
	}
	var meta map[string]json.RawMessage
	if m, ok := fields["metadata"]; !ok || json.Unmarshal(m, &meta) != nil || meta == nil {
		return nil, fmt.Errorf("%s: metadata of the %s is missing or not a mapping", o.Where(), o.Kind)
	}
	if o.Name, err = stringField(meta, "name"); err != nil {
		return nil, fmt.Errorf("%s: %s: metadata.%v", o.Where(), o.Kind, err)
	}
	if o.Namespace, err = stringField(meta, "namespace"); err != nil {
		return nil, fmt.Errorf("%s: %s %s: metadata.%v", o.Where(), o.Kind, quote(o.Name), err)
	}
	switch {
	case o.Name == "":
		return nil, fmt.Errorf("%s: metadata.name of the %s is missing", o.Where(), o.Kind)
	case !validName(o.Name):
		return nil, fmt.Errorf("%s: %s: metadata.name %s is not a valid object name", o.Where(), o.Kind, quote(o.Name))
	case o.Namespace != "" && !validName(o.Namespace):
		return nil, fmt.Errorf("%s: %s %s: metadata.namespace %s is not a valid namespace", o.Where(), o.Kind, o.Name, quote(o.Namespace))
	}
	o.JSON = js
	return nil, nil
}

// countItems counts the elements of a JSON array with a streaming decoder, without
// keeping them. null counts as an empty list.
func countItems(js json.RawMessage) (int, error) {
	if string(js) == "null" {
		return 0, nil
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return 0, errors.New("not a list")
	}
	n := 0
	for dec.More() {
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// stringField reads a string field; absent or null is "".
func stringField(fields map[string]json.RawMessage, key string) (string, error) {
	raw, ok := fields[key]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s is not a string", key)
	}
	return s, nil
}

// validName accepts object names as the API server does for most kinds: at most 253
// characters of lower-case letters, digits, '-', '.' and ':' (RBAC and a few kinds use
// ':'), starting and ending with a letter or digit.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && !((c == '-' || c == '.' || c == ':') && i > 0 && i < len(s)-1) {
			return false
		}
	}
	return true
}
