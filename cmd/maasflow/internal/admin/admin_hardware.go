package admin

import (
	"fmt"
	"io"
	"strconv"

	"github.com/maasflow/maasflow/shared/domain"
)

// printHardwareDiff prints a failed hardware verification's
// designed-vs-built diff, one line per SKU constraint; nothing when empty.
func (r *adminRun) printHardwareDiff(w io.Writer, diff []domain.Mismatch) {
	if len(diff) == 0 {
		return
	}
	fmt.Fprintln(w, "\nHardware (designed vs built):")
	t := r.table("FIELD", "DESIGNED", "BUILT")
	for _, m := range diff {
		t.row(m.Field, m.Want, m.Got)
	}
	t.flush()
}

// printAsBuilt prints the node's as-built inventory: GPUs by PCI address
// and NUMA node, NICs by PCI address with MAC and name, disks.
func (r *adminRun) printAsBuilt(w io.Writer, b *domain.AsBuilt) {
	if b == nil {
		fmt.Fprintln(w, "\nAs built: not verified yet")
		return
	}
	fmt.Fprintf(w, "\nAs built (region %s, %d MiB, %d cores):\n", orDash(b.Region), b.MemoryMiB, b.CPUCores)
	t := r.table("KIND", "PCI ADDRESS", "NUMA", "DEVICE", "MAC", "NAME")
	for _, g := range b.GPUs {
		t.row("gpu", g.PCIAddress, strconv.Itoa(g.NUMANode), g.ProductName+" ("+g.VendorID+":"+g.ProductID+")", "-", "-")
	}
	for _, n := range b.NICs {
		t.row("nic", n.PCIAddress, "-", fmt.Sprintf("%d Mb/s", n.LinkSpeedMbps), n.MACAddress, n.Name)
	}
	for _, d := range b.Disks {
		t.row("disk", orDash(d.PCIAddress), "-", fmt.Sprintf("%s %s, %d bytes", d.Model, d.Serial, d.SizeBytes), "-", d.Name)
	}
	t.flush()
}
