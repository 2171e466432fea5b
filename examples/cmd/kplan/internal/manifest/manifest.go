package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// MaxBytes is the largest input accepted from one file (or stdin).
const MaxBytes = 64 << 20

// MaxObjects is the most objects accepted from one file.
const MaxObjects = 100000

// Object is one Kubernetes object read from a manifest.
type Object struct {
	// Source is the file name ("stdin" for standard input).
	Source string
	// Doc is the 1-based YAML document number in the file.
	Doc int
	// Item is the 1-based item number inside a List, 0 when the object is a document
	// of its own.
	Item int
	// APIVersion, Kind, Namespace and Name are the object's identity as written
	// (Namespace may be empty).
	APIVersion, Kind, Namespace, Name string
	// JSON is the object as JSON.
	JSON []byte
}

// Where names the object's place: "pods.yaml: document 2, item 3".
func (o *Object) Where() string {
	s := fmt.Sprintf("%s: document %d", o.Source, o.Doc)
	if o.Item > 0 {
		s += fmt.Sprintf(", item %d", o.Item)
	}
	return s
}

// ID is "Kind namespace/name" (or "Kind name" without a namespace).
func (o *Object) ID() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// String names the object and its place: "pods.yaml: document 2 (Pod default/web-0)".
func (o *Object) String() string { return o.Where() + " (" + o.ID() + ")" }

// Errorf returns an error that starts with the object's String.
func (o *Object) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", o, fmt.Sprintf(format, args...))
}

// Decode unmarshals the object into v (a typed Kubernetes object). Unknown fields are
// ignored, as kubectl does for fields newer than its client; a field of the wrong type
// is an error naming the object and the field.
func (o *Object) Decode(v any) error {
	err := json.Unmarshal(o.JSON, v)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "(object)"
		}
		return o.Errorf("%s: cannot use a JSON %s as %s", field, te.Value, te.Type)
	}
	return o.Errorf("%v", err)
}

var kindRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

// Parse reads every object of one manifest. source names it in errors.
// Empty documents (only comments or whitespace) are skipped. Lists ("kind: List" or
// any kind ending in "List" with items) are expanded into their items.
func Parse(source string, data []byte) ([]Object, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%s: %d bytes is more than the limit of %d", source, len(data), MaxBytes)
	}
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []Object
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %s", source, doc, oneLine(err.Error()))
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: not valid YAML: %s", source, doc, oneLine(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")))
		}
		js = bytes.TrimSpace(js)
		if len(js) == 0 || string(js) == "null" {
			continue
		}
		o := Object{Source: source, Doc: doc}
		items, err := header(&o, js, true)
		if err != nil {
			return nil, err
		}
		if items == nil {
			objs = append(objs, o)
		}
		for i, item := range items {
			it := Object{Source: source, Doc: doc, Item: i + 1}
			if _, err := header(&it, item, false); err != nil {
				return nil, err
			}
			objs = append(objs, it)
		}
		if len(objs) > MaxObjects {
			return nil, fmt.Errorf("%s: more than %d objects", source, MaxObjects)
		}
	}
	return objs, nil
}

// header fills o's identity from js and returns a list's items (nil, and an error, for
// a list when lists are not allowed).
func header(o *Object, js []byte, allowList bool) ([]json.RawMessage, error) {
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

func printable(s string) bool {
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return false
		}
	}
	return true
}

// quote quotes a value from the input for an error message: Go syntax, so newlines
// and control characters never break the message's single line; long values are cut.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

// oneLine turns a message from a decoder into one printable line: whitespace runs
// become one space, invalid UTF-8 and other unprintable characters are escaped.
func oneLine(s string) string {
	var b strings.Builder
	for _, f := range strings.Fields(strings.ToValidUTF8(s, "\ufffd")) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		for _, c := range f {
			if unicode.IsPrint(c) {
				b.WriteRune(c)
			} else {
				q := strconv.QuoteRune(c)
				b.WriteString(q[1 : len(q)-1])
			}
		}
	}
	return b.String()
}

// Key identifies an object for duplicate detection.
type Key struct{ Group, Kind, Namespace, Name string }

// KeyOf returns o's key; namespace "" is treated as def.
func KeyOf(o *Object, def string) Key {
	group, _, _ := strings.Cut(o.APIVersion, "/")
	if !strings.Contains(o.APIVersion, "/") {
		group = ""
	}
	ns := o.Namespace
	if ns == "" {
		ns = def
	}
	return Key{Group: group, Kind: o.Kind, Namespace: ns, Name: o.Name}
}

// Dedupe returns an error naming both places when two objects have the same key
// (same group, kind, namespace and name): planning the same pod twice is always a
// mistake in the input.
func Dedupe(objs []Object, defaultNamespace string) error {
	seen := make(map[Key]int, len(objs))
	for i := range objs {
		k := KeyOf(&objs[i], defaultNamespace)
		if j, ok := seen[k]; ok {
			return fmt.Errorf("%s: the same object is also in %s", &objs[i], objs[j].Where())
		}
		seen[k] = i
	}
	return nil
}

// Read reads every object of the given paths: files, directories (their *.yaml,
// *.yml and *.json files, in name order, not recursive) or "-" for stdin (at most
// once). Duplicate objects are an error.
func Read(fsys FS, paths []string, stdin io.Reader) ([]Object, error) {
	var all []Object
	usedStdin := false
	for _, p := range paths {
		if p == "-" {
			if usedStdin {
				return nil, fmt.Errorf("stdin (-f -) given twice")
			}
			usedStdin = true
			data, err := io.ReadAll(io.LimitReader(stdin, MaxBytes+1))
			if err != nil {
				return nil, fmt.Errorf("stdin: %v", err)
			}
			objs, err := Parse("stdin", data)
			if err != nil {
				return nil, err
			}
			all = append(all, objs...)
			continue
		}
		files, err := fsys.Expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := fsys.ReadFile(f)
			if err != nil {
				return nil, err
			}
			objs, err := Parse(f, data)
			if err != nil {
				return nil, err
			}
			all = append(all, objs...)
		}
	}
	return all, nil
}

// FS is the file system Read uses.
type FS interface {
	// Expand returns the files a path names: itself, or a directory's manifests.
	Expand(path string) ([]string, error)
	// ReadFile reads at most MaxBytes+1 bytes of a file.
	ReadFile(path string) ([]byte, error)
}

// OSFS is the operating system's file system.
type OSFS struct{}

// Expand implements FS.
func (OSFS) Expand(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, errors.New(pathErr(path, err))
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, errors.New(pathErr(path, err))
	}
	var files []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml, *.yml or *.json files in the directory", path)
	}
	return files, nil
}

// ReadFile implements FS.
func (OSFS) ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.New(pathErr(path, err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, errors.New(pathErr(path, err))
	}
	return data, nil
}

// pathErr says what went wrong with path without repeating it.
func pathErr(path string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Sprintf("%s: %v", path, err)
}
