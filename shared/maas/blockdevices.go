package maas

import (
	"context"
	"net/http"
)

// BlockDevice is a machine's block device as MAAS lists it (GET
// nodes/{id}/blockdevices/, MAAS's src/maasserver/api/blockdevices.py).
type BlockDevice struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	// Type is "physical" or "virtual"; only a physical one can be the
	// boot disk.
	Type      string `json:"type"`
	Path      string `json:"path"`
	IDPath    string `json:"id_path,omitempty"`
	Model     string `json:"model,omitempty"`
	Serial    string `json:"serial,omitempty"`
	SizeBytes int64  `json:"size_bytes"`
	// Tags are MAAS's disk tags: ssd or rotary, and others commissioning
	// or an admin set.
	Tags []string `json:"tags,omitempty"`
}

type wireBlockDevice struct {
	ID     int        `json:"id"`
	Name   string     `json:"name"`
	Type   string     `json:"type"`
	Path   string     `json:"path"`
	IDPath nullString `json:"id_path"`
	Model  nullString `json:"model"`
	Serial nullString `json:"serial"`
	Size   int64      `json:"size"`
	Tags   []string   `json:"tags"`
}

// BlockDevices lists the machine's block devices. A read.
func (c *Client) BlockDevices(ctx context.Context, systemID string) ([]BlockDevice, error) {
	const op = "list block devices"
	if err := requireArg(op, systemID, "system_id", systemID); err != nil {
		return nil, err
	}
	var ws []wireBlockDevice
	if err := c.doJSON(ctx, request{
		op: op, systemID: systemID, method: http.MethodGet, path: nodePath(systemID) + "blockdevices/",
	}, &ws); err != nil {
		return nil, err
	}
	out := make([]BlockDevice, 0, len(ws))
	for _, w := range ws {
		out = append(out, BlockDevice{
			ID: w.ID, Name: w.Name, Type: w.Type, Path: w.Path, IDPath: string(w.IDPath), Model: string(w.Model),
			Serial: string(w.Serial), SizeBytes: w.Size, Tags: nilIfEmpty(w.Tags),
		})
	}
	return out, nil
}
