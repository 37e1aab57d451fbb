package maassim

import (
	"net/http"
	"strconv"
)

// Block devices: GET nodes/{system_id}/blockdevices/, GET and
// op=set_boot_disk on nodes/{system_id}/blockdevices/{id}/
// (MS/api/blockdevices.py). The simulator's block devices are all
// physical disks; a partition is a row of another table, reached under
// …/blockdevices/{id}/partitions/, so a partition's id never names a
// block device.

var (
	blockDevicesResource = resource{"GET ": (*Simulator).listBlockDevices}
	blockDeviceResource  = resource{
		"GET ":               (*Simulator).readBlockDevice,
		"POST set_boot_disk": (*Simulator).setBootDisk,
	}
)

// assignDiskIDs gives each of m's disks a block device id unique in the
// region, keeping the id of a disk commissioning saw before (MAAS updates
// the row of a known device rather than making a new one).
func (s *Simulator) assignDiskIDs(m *machine) {
	ids := map[string]int{}
	for _, d := range m.disks {
		id, ok := m.diskIDs[d.Name]
		if !ok {
			id = s.st.nextDiskID
			s.st.nextDiskID++
		}
		ids[d.Name] = id
	}
	m.diskIDs = ids
	if _, ok := ids[m.bootDisk]; !ok {
		m.bootDisk = ""
	}
}

// diskID is the block device id of m's n-th disk.
func (m *machine) diskID(n int) int {
	if id, ok := m.diskIDs[m.disks[n].Name]; ok {
		return id
	}
	return n + 1
}

// bootDiskIndex is the index of m's boot disk: the one set_boot_disk
// chose, else the first (Node.get_boot_disk without boot_disk set).
func (m *machine) bootDiskIndex() int {
	for n, d := range m.disks {
		if d.Name == m.bootDisk {
			return n
		}
	}
	return 0
}

func (s *Simulator) listBlockDevices(rq *request) reply {
	m := s.st.machines[rq.vars[0]]
	if m == nil {
		return notFound("Machine")
	}
	return jsonReply(http.StatusOK, renderDisks(m))
}

// lookupBlockDevice is get_block_device_or_404: the device is looked up by
// the node's system_id together with its id (an integer) or its name, so
// a device of another machine is "No BlockDevice matches the given query."
// like one that does not exist.
func (s *Simulator) lookupBlockDevice(rq *request) (*machine, int, *reply) {
	m := s.st.machines[rq.vars[0]]
	spec := rq.vars[1]
	if m != nil {
		_, numeric := strconv.Atoi(spec)
		for n, d := range m.disks {
			if (numeric == nil && strconv.Itoa(m.diskID(n)) == spec) || (numeric != nil && d.Name == spec) {
				return m, n, nil
			}
		}
	}
	rp := notFound("BlockDevice")
	return nil, 0, &rp
}

func (s *Simulator) readBlockDevice(rq *request) reply {
	m, n, bad := s.lookupBlockDevice(rq)
	if bad != nil {
		return *bad
	}
	return jsonReply(http.StatusOK, renderDisks(m)[n])
}

// setBootDisk is BlockDeviceHandler.set_boot_disk: admin, the machine
// Ready and nothing else (NodeStateViolation, 409), a physical block device
// (a virtual one is 400 "Cannot set a <type> block device as the boot
// disk."; the simulator has none). MAAS answers "OK".
func (s *Simulator) setBootDisk(rq *request) reply {
	m, n, bad := s.lookupBlockDevice(rq)
	if bad != nil {
		return *bad
	}
	if m.status != statusReady {
		return conflict("Cannot set as boot disk because the machine is not Ready.")
	}
	m.bootDisk = m.disks[n].Name
	return textReply(http.StatusOK, "OK")
}
