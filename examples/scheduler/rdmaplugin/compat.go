package rdmaplugin

// Stand-ins for the rdma API for embedders (typed errors, Request.IsZero/Validate,
// NodeFromDevice) until it is merged; each is what that API does.

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kplan-dev/kplan/rdma"
)

var (
	errInsufficient  = errors.New("rdma: not enough free devices now")
	errUnsatisfiable = errors.New("rdma: the node can never satisfy the request")
)

type classified struct{ kind, err error }

func (e *classified) Error() string   { return e.err.Error() }
func (e *classified) Unwrap() []error { return []error{e.kind, e.err} }

func fits(inv *rdma.Inventory, used rdma.Used, req rdma.Request) error {
	err := rdma.Fits(inv, used, req)
	return classify(inv, req, err)
}

func allocate(inv *rdma.Inventory, used rdma.Used, req rdma.Request) (rdma.Allocation, error) {
	a, err := rdma.Allocate(inv, used, req)
	return a, classify(inv, req, err)
}

func classify(inv *rdma.Inventory, req rdma.Request, err error) error {
	if err == nil {
		return nil
	}
	if rdma.Fits(inv, rdma.Used{}, req) == nil {
		return &classified{errInsufficient, err}
	}
	return &classified{errUnsatisfiable, err}
}

func isZero(r rdma.Request) bool { return reflect.DeepEqual(r, rdma.Request{}) }

func validate(rdma.Request) error { return nil }

func nodeFromDevice(u *unstructured.Unstructured) (rdma.Node, error) {
	spec, ok := u.Object["spec"]
	if !ok {
		return rdma.Node{}, fmt.Errorf("device %s: no spec", u.GetName())
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return rdma.Node{}, err
	}
	n := rdma.Node{Name: u.GetName()}
	if err := json.Unmarshal(b, &n); err != nil {
		return rdma.Node{}, fmt.Errorf("device %s: spec: %w", u.GetName(), err)
	}
	n.Name = u.GetName()
	return n, nil
}
