package maas

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// statusFilterNames are the status= / not_status= filter values of the
// in-progress statuses a wait skips (maas-behaviour §4: the constant
// names, lower-cased; §14.11: names, not integers).
var statusFilterNames = map[Status]string{
	StatusCommissioning: "commissioning", StatusTesting: "testing", StatusDeploying: "deploying",
	StatusReleasing: "releasing", StatusDiskErasing: "disk_erasing",
}

// MachineUnlessIn reads the machine only once it has left the given
// statuses: GET machines/?id=<system_id>&not_status=… (maas-behaviour
// §6) answers [] while the machine is still in one of them, a few bytes
// instead of the whole machine object, and the machine itself once it is
// not. left is false for []; a machine MAAS does not know answers [] too,
// so a caller that polls this way reads the machine itself (Get) now and
// then. A read. statuses must be among Commissioning, Testing, Deploying,
// Releasing and Disk erasing.
func (c *Client) MachineUnlessIn(ctx context.Context, systemID string, statuses ...Status) (m Machine, left bool, err error) {
	const op = "poll machine status"
	if err := requireArg(op, systemID, "system_id", systemID); err != nil {
		return Machine{}, false, err
	}
	q := url.Values{"id": {systemID}}
	for _, s := range statuses {
		name, ok := statusFilterNames[s]
		if !ok {
			return Machine{}, false, fmt.Errorf("%s: status %s is not a wait's in-progress status", op, s)
		}
		q.Add("not_status", name)
	}
	ms, err := c.listMachines(ctx, op, q)
	if err != nil {
		return Machine{}, false, err
	}
	for _, m := range ms {
		if strings.EqualFold(m.SystemID, systemID) {
			return m, true, nil
		}
	}
	return Machine{}, false, nil
}
