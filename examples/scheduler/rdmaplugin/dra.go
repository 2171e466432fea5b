package rdmaplugin

import (
	"fmt"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/kplan-dev/kplan/rdma"
)

// publishedDRA is what one node-local ResourceSlice publishes that the plugin can
// recognise: the PCI addresses of its devices (resource.kubernetes.io/pciBusID).
type publishedDRA struct {
	driver  string
	bdfs    []rdma.BDF // sorted
	version string     // the slice's resourceVersion
}

// setSlice records a ResourceSlice (add or update). Only slices of one node
// (spec.nodeName) are kept, with the devices that carry a PCI address. A slice no
// newer than the one recorded (by resourceVersion) is ignored.
func (c *cluster) setSlice(s *resourcev1.ResourceSlice) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.slices {
		if prev, ok := m[s.Name]; ok && (olderVersion(s.ResourceVersion, prev.version) || (s.ResourceVersion != "" && s.ResourceVersion == prev.version)) {
			return
		}
	}
	c.dropSliceLocked(s.Name)
	if s.Spec.NodeName == nil || *s.Spec.NodeName == "" {
		return
	}
	var bdfs []rdma.BDF
	for _, d := range s.Spec.Devices {
		a, ok := d.Attributes[rdma.DRAAttributePCIBusID]
		if !ok || a.StringValue == nil {
			continue
		}
		if b, err := rdma.ParseBDF(*a.StringValue); err == nil {
			bdfs = append(bdfs, b)
		}
	}
	if len(bdfs) == 0 {
		return
	}
	slices.SortFunc(bdfs, rdma.BDF.Compare)
	node := *s.Spec.NodeName
	if c.slices[node] == nil {
		c.slices[node] = map[string]publishedDRA{}
	}
	c.slices[node][s.Name] = publishedDRA{driver: s.Spec.Driver, bdfs: bdfs, version: s.ResourceVersion}
	c.invalidate(node)
}

// deleteSlice forgets a ResourceSlice.
func (c *cluster) deleteSlice(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropSliceLocked(name)
}

func (c *cluster) dropSliceLocked(name string) {
	for node, m := range c.slices {
		if _, ok := m[name]; ok {
			delete(m, name)
			if len(m) == 0 {
				delete(c.slices, node)
			}
			c.invalidate(node)
		}
	}
}

// draConflict is the error of a node whose Device object and ResourceSlices publish
// the same devices; nil otherwise (also without a usable Device object).
func (c *cluster) draConflict(node string) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.overlapLocked(node)
}

// maxListedOverlap caps the devices an overlap error lists.
const maxListedOverlap = 4

// overlapLocked reports the devices of the node's Device object that a ResourceSlice
// of the node also publishes (by PCI address), naming the first such slice.
func (c *cluster) overlapLocked(node string) error {
	published := c.slices[node]
	if len(published) == 0 {
		return nil
	}
	d := c.devices[node]
	names := make([]string, 0, len(published))
	for name := range published {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s := published[name]
		var both []string
		for _, b := range s.bdfs {
			if d.hasBDF(b) {
				both = append(both, b.String())
			}
		}
		if len(both) == 0 {
			continue
		}
		n := len(both)
		if n > maxListedOverlap {
			both = append(both[:maxListedOverlap], fmt.Sprintf("and %d more", n-maxListedOverlap))
		}
		count := fmt.Sprintf("%d devices are", n)
		if n == 1 {
			count = "1 device is"
		}
		return &nodeError{Reason: ReasonDevicesPublishedTwice, Message: fmt.Sprintf("node %s: %s published both by Device %s and by ResourceSlice %s of DRA driver %s (%s): two allocators would hand them out independently, so the node is used by neither RDMA nor DRA pods (args.draOverlap: Refuse)",
			node, count, node, name, s.driver, strings.Join(both, ", "))}
	}
	return nil
}
