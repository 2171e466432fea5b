package tmpl

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/kplan-dev/kplan/internal/proptest"
)

func TestMain(m *testing.M) { os.Exit(proptest.Run(m, proptest.DefaultChecks)) }

// The data the tests execute templates on: a table of servers and devices as a
// rank-table renderer passes it, and a device annotation as a parser gets it.
type (
	testDevice struct{ DeviceId, DeviceIp, RankId string }
	testServer struct {
		ServerId string
		Devices  []testDevice
	}
	table struct {
		ServerCount int
		Servers     []testServer
		Status      string
	}
)

func testTable(servers, devices int) *table {
	t := &table{ServerCount: servers, Status: "completed"}
	rank := 0
	for s := range servers {
		srv := testServer{ServerId: fmt.Sprintf("192.168.1.%d", 10+s)}
		for d := range devices {
			srv.Devices = append(srv.Devices, testDevice{DeviceId: fmt.Sprint(d), DeviceIp: fmt.Sprintf("10.20.%d.%d", s, d), RankId: fmt.Sprint(rank)})
			rank++
		}
		t.Servers = append(t.Servers, srv)
	}
	return t
}

const testAnnotation = `{"pod_name":"qwen-0","server_id":"192.168.1.10","devices":[{"device_id":"0","device_ip":"10.20.0.2"},{"device_id":"1","device_ip":"10.20.0.3"}]}`

var (
	testValueNames = []string{"podIP", "nodeName"}
	testValues     = []string{"172.16.0.1", "node-1"}
)

// cpuTime is the process's user and system CPU time: the machine the tests run on is
// shared, and wall time measures the neighbours.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
