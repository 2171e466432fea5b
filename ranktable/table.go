package ranktable

import "fmt"

// Order is the policy that orders servers and the devices inside a server, and so
// assigns rank ids. The empty Order is [Natural].
type Order string

// Orders.
const (
	// Natural orders server ids and device ids digit-run aware: device "10" follows "9"
	// and server "192.168.1.10" follows "192.168.1.9". The default.
	Natural Order = "Natural"
	// Lexicographic orders both as plain strings, exactly as the design does.
	Lexicographic Order = "Lexicographic"
	// PodIndex orders servers by a stable per-pod index (the hccl/rankIndex annotation
	// when present, else role id, entry pod first, then pod name) and devices
	// numerically.
	PodIndex Order = "PodIndex"
)

// normalize returns o with the default applied, or an error for an unknown order.
func (o Order) normalize() (Order, error) {
	switch o {
	case "":
		return Natural, nil
	case Natural, Lexicographic, PodIndex:
		return o, nil
	}
	return "", fmt.Errorf("%q is not an order (want %s, %s or %s)", string(o), Natural, Lexicographic, PodIndex)
}

// Table statuses.
const (
	StatusCompleted    = "completed"
	StatusInitializing = "initializing"
)

// Member is one pod's contribution to a table.
type Member struct {
	// Pod is namespace/name, used in errors.
	Pod string
	// Data is what the parser read from the pod's annotation.
	Data PodData
	// PodIP and NodeName come from the pod object.
	PodIP, NodeName string
	// Role is the pod's role label value, RoleID its role id label value.
	Role, RoleID string
	// Entry marks the entry pod of its role replica.
	Entry bool
	// RankIndex is the pod's stable rank index, or -1.
	RankIndex int
}

// Table is the data a ranktable template receives. Field names follow the design.
type Table struct {
	// Status is BuildOptions.Status (default StatusCompleted).
	Status string
	// ServerCount is the number of servers, len(Servers).
	ServerCount int
	// TotalDevices is the number of devices over all servers, which is also the
	// number of ranks.
	TotalDevices int
	// Timestamp is whatever the caller supplied (empty by default): never the clock.
	Timestamp string
	// Servers are the servers in rank order; their devices carry rank ids 0..n-1.
	Servers []Server
	// SuperPods lists servers per super pod id, super pods in order of their first
	// server; empty when no server has a super pod id.
	SuperPods []SuperPod
	// Roles lists servers per role (for prefill/decode layouts), roles in order of
	// their first server.
	Roles []RoleServers
}

// Server is one server (node) of a table. Field names are the design's, as templates
// use them.
type Server struct {
	// ServerId is the server id the pods' annotations give (usually the node IP).
	ServerId string
	// HostIp is the node's IP as the device plugin reports it, or "".
	HostIp string
	// ContainerIp is the IP of the pod the server's devices came from.
	ContainerIp string
	// SuperPodId is the Atlas A3 super pod the server belongs to, or "".
	SuperPodId string
	// PodName is the name of the pod the server's devices came from.
	PodName string
	// NodeName is the node the pod runs on.
	NodeName string
	// Role is the pod's role label value ("" when it has none).
	Role string
	// Devices are the server's devices in device id order, with their ranks.
	Devices []RankedDevice
}

// RankedDevice is one device with its rank. Field names are the design's, as
// templates use them; numbers are decimal strings.
type RankedDevice struct {
	// DeviceId is the device id the annotation gives ("0".."15").
	DeviceId string
	// DeviceIp is the device's RoCE IP address.
	DeviceIp string
	// SuperDeviceId is the device's id inside its super pod (Atlas A3), or "".
	SuperDeviceId string
	// RankId is the device's rank, 0..n-1 over the table.
	RankId string
	// ClusterId is the 1-based global index of the device (RankId + 1).
	ClusterId string
}

// SuperPod is one super pod of an Atlas A3 table.
type SuperPod struct {
	// SuperPodId is the super pod's id.
	SuperPodId string
	// ServerIds are the super pod's servers, in rank order.
	ServerIds []string
}

// RoleServers is one role's servers.
type RoleServers struct {
	// Role is the role label value.
	Role string
	// Servers are the role's servers, in rank order.
	Servers []Server
}

// BuildOptions change how Build orders and labels a table.
type BuildOptions struct {
	// Order is how servers are ordered before ranks are assigned.
	Order Order
	// Status is the table's Status (default StatusCompleted).
	Status string
	// Timestamp is handed to templates as .Timestamp.
	Timestamp string
}
