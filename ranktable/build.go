package ranktable

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/kplan-dev/kplan/internal/natural"
)

// Build validates members and assigns rank ids 0..n-1: servers (members grouped by
// server id, merged in member order) in the order opts.Order gives, devices inside a
// server numerically (lexicographically under Lexicographic). members is not changed
// and its order does not matter. A pod named twice, a device id twice on one server,
// or any invalid annotation field is an error naming the pod; so is an unknown
// opts.Order.
func Build(members []Member, opts BuildOptions) (*Table, error) {
	return build(members, opts, true)
}

// build is Build; validate=false skips the per-pod checks for data parseChecked
// already checked.
func build(members []Member, opts BuildOptions, validate bool) (*Table, error) {
	order, err := opts.Order.normalize()
	if err != nil {
		return nil, fmt.Errorf("BuildOptions.Order: %v", err)
	}
	opts.Order = order
	ms := make([]*Member, len(members))
	for i := range members {
		ms[i] = &members[i]
	}
	slices.SortFunc(ms, func(a, b *Member) int { return cmp.Compare(a.Pod, b.Pod) })
	for i, m := range ms {
		if i > 0 && ms[i-1].Pod == m.Pod {
			return nil, fmt.Errorf("pod %s: listed twice", m.Pod)
		}
		if !validate {
			continue
		}
		if err := validatePodData(&m.Data); err != nil {
			return nil, fmt.Errorf("pod %s: %w", m.Pod, err)
		}
	}
	if opts.Order == PodIndex {
		slices.SortFunc(ms, comparePodIndex)
	}
	type srv struct {
		first *Member
		devs  []Device
		pods  int
		// byDevice maps device ids to the pod that gives them, made when a second
		// pod joins the server, so the duplicate check is linear.
		byDevice map[string]*Member
	}
	byID := make(map[string]int, len(ms))
	servers := make([]srv, 0, len(ms))
	total := 0
	for _, m := range ms {
		i, ok := byID[m.Data.ServerID]
		if !ok {
			i = len(servers)
			byID[m.Data.ServerID] = i
			servers = append(servers, srv{first: m})
		}
		s := &servers[i]
		if s.pods > 0 {
			if s.byDevice == nil {
				s.byDevice = make(map[string]*Member, len(s.devs)+len(m.Data.Devices))
				for _, d := range s.devs {
					s.byDevice[d.ID] = s.first
				}
			}
			for _, d := range m.Data.Devices {
				if other, dup := s.byDevice[d.ID]; dup {
					return nil, fmt.Errorf("pod %s: device_id %s on server %s is also given by pod %s", m.Pod, d.ID, m.Data.ServerID, other.Pod)
				}
				s.byDevice[d.ID] = m
			}
		}
		if s.pods == 0 {
			// Shared with the member until a second pod or a sort needs a copy.
			s.devs = slices.Clip(m.Data.Devices)
		} else {
			s.devs = append(s.devs, m.Data.Devices...)
		}
		s.pods++
		total += len(m.Data.Devices)
	}
	idCmp := natural.Compare
	if opts.Order == Lexicographic {
		idCmp = cmp.Compare[string]
	}
	switch {
	case opts.Order == Natural && allIPv4(servers, func(s srv) string { return s.first.Data.ServerID }):
		// Natural order of canonical dotted quads is numeric order: sort by the address.
		slices.SortFunc(servers, func(a, b srv) int { return cmp.Compare(ipv4(a.first.Data.ServerID), ipv4(b.first.Data.ServerID)) })
	case opts.Order != PodIndex:
		slices.SortFunc(servers, func(a, b srv) int { return idCmp(a.first.Data.ServerID, b.first.Data.ServerID) })
	}
	t := &Table{
		Status: cmp.Or(opts.Status, StatusCompleted), ServerCount: len(servers),
		TotalDevices: total, Timestamp: opts.Timestamp, Servers: make([]Server, len(servers)),
	}
	all := make([]RankedDevice, total)
	rank := 0
	for i, s := range servers {
		if !sortedBy(s.devs, idCmp) {
			if s.pods == 1 {
				s.devs = slices.Clone(s.devs) // the member's slice: not ours to sort
			}
			slices.SortFunc(s.devs, func(a, b Device) int { return idCmp(a.ID, b.ID) })
		}
		out := all[rank : rank+len(s.devs) : rank+len(s.devs)]
		for j, d := range s.devs {
			out[j] = RankedDevice{
				DeviceId: d.ID, DeviceIp: d.IP, SuperDeviceId: d.SuperDeviceID,
				RankId: strconv.Itoa(rank), ClusterId: strconv.Itoa(rank + 1),
			}
			rank++
		}
		m := s.first
		t.Servers[i] = Server{
			ServerId: m.Data.ServerID, HostIp: m.Data.HostIP, ContainerIp: m.PodIP,
			SuperPodId: m.Data.SuperPodID, PodName: cmp.Or(m.Data.PodName, podName(m.Pod)),
			NodeName: m.NodeName, Role: m.Role, Devices: out,
		}
	}
	t.SuperPods = superPods(t.Servers)
	t.Roles = roles(t.Servers)
	return t, nil
}

// allIPv4 reports whether id gives a canonical IPv4 address (dotted quad without
// leading zeros) for every element of xs.
func allIPv4[T any](xs []T, id func(T) string) bool {
	for _, x := range xs {
		if _, ok := parseIPv4(id(x)); !ok {
			return false
		}
	}
	return true
}

// ipv4 returns the address of a canonical dotted quad (checked by allIPv4).
func ipv4(s string) uint32 {
	a, _ := parseIPv4(s)
	return a
}

// parseIPv4 parses a canonical dotted quad: four decimal octets 0..255 without leading
// zeros.
func parseIPv4(s string) (uint32, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return 0, false
	}
	b := a.As4()
	return binary.BigEndian.Uint32(b[:]), true
}

func sortedBy(devs []Device, c func(a, b string) int) bool {
	for i := 1; i < len(devs); i++ {
		if c(devs[i-1].ID, devs[i].ID) > 0 {
			return false
		}
	}
	return true
}

// comparePodIndex orders members with a rank index first (by index), then by role id,
// entry pod first, pod name (all digit-run aware), then pod key.
func comparePodIndex(a, b *Member) int {
	ha, hb := a.RankIndex >= 0, b.RankIndex >= 0
	if ha != hb {
		if ha {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(a.RankIndex, b.RankIndex); c != 0 {
		return c
	}
	if c := natural.Compare(a.RoleID, b.RoleID); c != 0 {
		return c
	}
	if a.Entry != b.Entry {
		if a.Entry {
			return -1
		}
		return 1
	}
	return natural.Compare(a.Pod, b.Pod)
}

func podName(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[i+1:]
		}
	}
	return key
}

func superPods(servers []Server) []SuperPod {
	var out []SuperPod
	idx := map[string]int{}
	for _, s := range servers {
		if s.SuperPodId == "" {
			continue
		}
		i, ok := idx[s.SuperPodId]
		if !ok {
			i = len(out)
			idx[s.SuperPodId] = i
			out = append(out, SuperPod{SuperPodId: s.SuperPodId})
		}
		out[i].ServerIds = append(out[i].ServerIds, s.ServerId)
	}
	return out
}

func roles(servers []Server) []RoleServers {
	var out []RoleServers
	idx := map[string]int{}
	for _, s := range servers {
		i, ok := idx[s.Role]
		if !ok {
			i = len(out)
			idx[s.Role] = i
			out = append(out, RoleServers{Role: s.Role})
		}
		out[i].Servers = append(out[i].Servers, s)
	}
	return out
}
