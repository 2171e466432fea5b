package ranktable

import "bytes"

// fastDecode decodes the common shape of parser template output without the YAML
// library:
//
//	podName: "qwen-0"
//	serverId: "192.168.1.10"
//	devices:
//	  - deviceId: "0"
//	    deviceIp: "10.20.0.2"
//
// It accepts only known keys, each once, with double-quoted printable ASCII values
// without escapes, and reports ok=false for anything else, which then goes to the YAML
// decoder. Where it accepts, its result equals the YAML decoder's (a fuzz target checks
// it).
func fastDecode(b []byte) (PodData, bool) {
	var d PodData
	var seen [5]bool
	inDevices, sawDevices := false, false
	itemIndent := -1
	var devSeen [3]bool
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		if len(line) == 0 {
			continue
		}
		indent := 0
		for indent < len(line) && line[indent] == ' ' {
			indent++
		}
		if indent == len(line) {
			continue
		}
		rest := line[indent:]
		if indent == 0 {
			inDevices = false
			if string(rest) == "devices:" {
				if sawDevices {
					return PodData{}, false
				}
				sawDevices, inDevices = true, true
				continue
			}
			key, val, ok := keyValue(rest)
			if !ok {
				return PodData{}, false
			}
			var slot *string
			var n int
			switch key {
			case "podName":
				slot, n = &d.PodName, 0
			case "serverId":
				slot, n = &d.ServerID, 1
			case "hostIp":
				slot, n = &d.HostIP, 2
			case "superPodId":
				slot, n = &d.SuperPodID, 3
			case "serverIndex":
				slot, n = &d.ServerIndex, 4
			default:
				return PodData{}, false
			}
			if seen[n] {
				return PodData{}, false
			}
			seen[n], *slot = true, val
			continue
		}
		if !inDevices {
			return PodData{}, false
		}
		if rest[0] == '-' {
			if len(rest) < 2 || rest[1] != ' ' || (itemIndent >= 0 && indent != itemIndent) {
				return PodData{}, false
			}
			itemIndent = indent
			rest = rest[2:]
			if len(rest) == 0 || rest[0] == ' ' {
				return PodData{}, false
			}
			d.Devices = append(d.Devices, Device{})
			devSeen = [3]bool{}
		} else if itemIndent < 0 || indent != itemIndent+2 {
			return PodData{}, false
		}
		key, val, ok := keyValue(rest)
		if !ok {
			return PodData{}, false
		}
		dev := &d.Devices[len(d.Devices)-1]
		var slot *string
		var n int
		switch key {
		case "deviceId":
			slot, n = &dev.ID, 0
		case "deviceIp":
			slot, n = &dev.IP, 1
		case "superDeviceId":
			slot, n = &dev.SuperDeviceID, 2
		default:
			return PodData{}, false
		}
		if devSeen[n] {
			return PodData{}, false
		}
		devSeen[n], *slot = true, val
	}
	if !sawDevices || len(d.Devices) == 0 || !seen[0] || !seen[1] {
		return PodData{}, false
	}
	return d, true
}

// keyValue splits `key: "value"` where value is printable ASCII without '"' or '\'.
func keyValue(line []byte) (string, string, bool) {
	i := bytes.Index(line, []byte(`: "`))
	if i <= 0 || line[len(line)-1] != '"' || len(line) < i+4 {
		return "", "", false
	}
	key := line[:i]
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "", "", false
		}
	}
	val := line[i+3 : len(line)-1]
	for _, c := range val {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "", "", false
		}
	}
	return string(key), string(val), true
}
