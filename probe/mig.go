package probe

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/claim"
	"github.com/tfhive/tfhive/probe/inventory"
)

// A GPU in MIG mode is reached by CUDA only through its MIG devices
// (CUDA_VISIBLE_DEVICES=MIG-…, one per process), so the probe lists each
// as an entry of its own after the host's physical GPUs. `nvidia-smi -q
// -x` gives a MIG device's memory and the processes in it but not its
// UUID; `nvidia-smi -L` gives the UUID and the profile, and nothing else.
// The probe script runs -L after -q -x, in the same session, only when
// some GPU is in MIG mode, and prints it after markMIG (the smi section's
// tail: see cutMIGList). testdata/nvidia-smi/README.md has the formats
// and their sources.

// markMIG starts `nvidia-smi -L`'s output within the smi section.
const markMIG = "@@tfhive-mig"

// Reasons a MIG instance is not offered (MIGInstance.Unusable).
const (
	migNoUUID = "nvidia-smi -L gave no UUID for it"
	// Drivers before R470 named MIG devices MIG-GPU-UUID/GI/CI, which
	// CUDA takes but a claim's file name cannot hold.
	migOldUUID = "its UUID (%s) is the pre-R470 form, which claims cannot name: update the driver"
)

// cutMIGList splits the smi section into nvidia-smi -q -x's output and
// -L's (nil when the script did not run it). The marker is looked for
// last: -L's output, GPU names and UUIDs, never holds it.
func cutMIGList(smi []byte) (report, list []byte) {
	i := bytes.LastIndex(smi, []byte("\n"+markMIG+"\n"))
	if i < 0 {
		if bytes.HasPrefix(smi, []byte(markMIG+"\n")) {
			return nil, smi[len(markMIG)+1:]
		}
		return smi, nil
	}
	return smi[:i], smi[i+len(markMIG)+2:]
}

// migInstances makes an entry for each MIG device of parent (in MIG
// mode), in nvidia-smi's order; Index is set by the caller, UUID by
// applyMIGList.
func migInstances(parent inventory.GPU, devs []smiMIGDevice) []inventory.GPU {
	out := make([]inventory.GPU, 0, len(devs))
	for k, d := range devs {
		dev, err := strconv.Atoi(strings.TrimSpace(d.Index))
		if err != nil {
			dev = k
		}
		gi, _ := strconv.Atoi(strings.TrimSpace(d.GI))
		ci, _ := strconv.Atoi(strings.TrimSpace(d.CI))
		out = append(out, inventory.GPU{
			Name:           parent.Name,
			MemoryUsedMiB:  parseMiB(d.FBMemory.Used),
			MemoryTotalMiB: parseMiB(d.FBMemory.Total),
			Processes:      []inventory.Process{},
			MIGInstance: &inventory.MIGInstance{
				Parent: parent.Index, Device: dev, GPUInstanceID: gi, ComputeInstanceID: ci,
				Unusable: migNoUUID,
			},
		})
	}
	return out
}

// instanceOf is the position in instances of the MIG device whose GPU and
// compute instance ids are gi and ci, or -1 ("N/A", or none such).
func instanceOf(instances []inventory.GPU, gi, ci string) int {
	g, err1 := strconv.Atoi(strings.TrimSpace(gi))
	c, err2 := strconv.Atoi(strings.TrimSpace(ci))
	if err1 != nil || err2 != nil {
		return -1
	}
	for k, in := range instances {
		if in.MIGInstance.GPUInstanceID == g && in.MIGInstance.ComputeInstanceID == c {
			return k
		}
	}
	return -1
}

// applyMIGList gives the MIG instances of gpus their UUIDs and profiles
// from `nvidia-smi -L`:
//
//	GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5d5ba0d6-…)
//	  MIG 1g.5gb      Device  0: (UUID: MIG-c6d4f1ef-…)
//
// A MIG line belongs to the GPU line above it, matched to the -q -x
// report's GPU by UUID (not by the number, which is the same enumeration
// but need not stay so), and to its MIG device by "Device N", the -q -x
// report's <mig_device><index>. Lines it cannot read are passed over:
// an instance without a UUID stays unusable.
func applyMIGList(gpus []inventory.GPU, list []byte) {
	if len(list) == 0 {
		return
	}
	parent := -1
	for line := range strings.Lines(string(list)) {
		t := strings.TrimSpace(line)
		uuid := listUUID(t)
		switch {
		case strings.HasPrefix(t, "GPU "):
			parent = -1
			for _, g := range gpus {
				if g.MIGInstance == nil && g.UUID != "" && g.UUID == uuid {
					parent = g.Index
				}
			}
		case strings.HasPrefix(t, "MIG ") && parent >= 0 && uuid != "":
			f := strings.Fields(t) // MIG PROFILE Device N: (UUID: …)
			if len(f) < 4 || f[2] != "Device" {
				continue
			}
			dev, err := strconv.Atoi(strings.TrimSuffix(f[3], ":"))
			if err != nil {
				continue
			}
			for k := range gpus {
				in := gpus[k].MIGInstance
				if in == nil || in.Parent != parent || in.Device != dev {
					continue
				}
				gpus[k].UUID, in.Profile, in.Unusable = uuid, f[1], ""
				if !claim.ValidUUID(uuid) {
					in.Unusable = strings.Replace(migOldUUID, "%s", uuid, 1)
				}
			}
		}
	}
}

// listUUID is the UUID of a `nvidia-smi -L` line, "" if none: what
// "(UUID: " and ")" enclose, without spaces or control characters.
func listUUID(line string) string {
	_, rest, ok := strings.Cut(line, "(UUID: ")
	if !ok {
		return ""
	}
	uuid, _, ok := strings.Cut(rest, ")")
	if !ok || uuid == "" || len(uuid) > 128 || strings.ContainsFunc(uuid, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return ""
	}
	return uuid
}
