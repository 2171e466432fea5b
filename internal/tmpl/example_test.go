package tmpl_test

import (
	"errors"
	"fmt"

	"github.com/kplan-dev/kplan/internal/tmpl"
)

// A template with a late-bound value, run under the default limits, then one that
// exceeds its work limit.
func Example() {
	p, err := tmpl.Parse(tmpl.Spec{
		Name:       "ns/parser",
		Text:       `{{ $d := fromJson . }}{{ $d.server_id }} on {{ nodeName | quote }}`,
		MissingKey: "zero",
		Values:     []string{"nodeName"},
	})
	if err != nil {
		panic(err)
	}
	out, err := p.Execute(`{"server_id": "192.168.1.10"}`, 1<<10, nil, "node-1")
	fmt.Println(string(out), err)

	loop, err := tmpl.Parse(tmpl.Spec{Name: "ns/loop", Text: `{{ range 1000000000 }}{{ end }}`,
		Limits: tmpl.Limits{WorkName: "MaxTemplateWork"}})
	if err != nil {
		panic(err)
	}
	_, err = loop.Execute(nil, 1<<10, nil)
	fmt.Println(errors.Is(err, tmpl.ErrBudgetExceeded))
	fmt.Println(err)
	// Output:
	// 192.168.1.10 on "node-1" <nil>
	// true
	// template: ns/loop:1:9: executing "ns/loop" at <range>: range over 1000000000 elements: the work limit of 5000000 units is exceeded (MaxTemplateWork): template budget exceeded
}
