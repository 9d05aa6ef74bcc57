package probe

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tfhive/tfhive/probe/inventory"
)

// smiFacts is what one `nvidia-smi -q -x` run said about a host.
// The JSON names are HostInventory's, so golden files read like status output.
type smiFacts struct {
	Driver      string          `json:"driver_version"`
	CUDA        string          `json:"cuda_version,omitempty"`
	GPUs        []inventory.GPU `json:"gpus"`
	NoNvidiaSMI bool            `json:"no_nvidia_smi"`
	DriverError string          `json:"driver_error"`
}

// maxDriverErrorLen keeps a runaway message (a core dump notice, a wall of
// warnings) from flooding the status table; the first line is what users act on.
const maxDriverErrorLen = 300

// parseSMI interprets the exit status and combined stdout+stderr of
// nvidia-smi as run by the probe script (under coreutils `timeout`),
// followed, on a host with a GPU in MIG mode, by `nvidia-smi -L`'s
// (mig.go).
//
// GPUs is non-nil (possibly empty) exactly when the GPU list is known, so
// that a host with zero GPUs serialises as "gpus": [] and one whose driver
// failed as "gpus": null.
func parseSMI(exitCode int, output []byte, timeout time.Duration) smiFacts {
	output, list := cutMIGList(output)
	switch exitCode {
	case 0:
		if !bytes.Contains(output, []byte("<nvidia_smi_log")) && hasNoDevices(output) {
			return smiFacts{GPUs: []inventory.GPU{}}
		}
		log, gpus, err := parseNvidiaSMIXML(output)
		if err != nil {
			return smiFacts{DriverError: "cannot parse nvidia-smi output: " + err.Error()}
		}
		applyMIGList(gpus, list)
		return smiFacts{Driver: log.Driver, CUDA: log.CUDA, GPUs: gpus}
	case 124, 137:
		// 124: timeout sent TERM; 137 = 128+KILL: it had to use -k, or the
		// kernel OOM killer got there first, which we cannot tell apart.
		msg := "nvidia-smi timed out"
		if timeout > 0 {
			msg += " after " + timeout.String()
		}
		return smiFacts{DriverError: msg}
	case 127:
		// The shell says 127 for "command not found", but the dynamic loader
		// also exits 127 when nvidia-smi exists and a library it needs does
		// not (a half-removed driver): that host is broken, not CPU-only.
		if !bytes.Contains(output, []byte("error while loading shared libraries")) {
			return smiFacts{NoNvidiaSMI: true}
		}
	}
	// nvidia-smi exits 6 (NVML "not found") here; matching the text rather
	// than the code also covers drivers that report it differently.
	if hasNoDevices(output) {
		return smiFacts{GPUs: []inventory.GPU{}}
	}
	return smiFacts{DriverError: fmt.Sprintf("%s (exit %d)", firstMeaningfulLine(output), exitCode)}
}

func hasNoDevices(output []byte) bool {
	return bytes.Contains(output, []byte("No devices were found"))
}

// firstMeaningfulLine picks the line a user should see: nvidia-smi states
// the failure first; what follows is blank or detail such as
// "NVML library version: 550.120".
func firstMeaningfulLine(output []byte) string {
	for line := range strings.Lines(string(output)) {
		line = strings.TrimSpace(sanitizeText(line))
		if line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > maxDriverErrorLen {
			line = string([]rune(line)[:maxDriverErrorLen]) + "…"
		}
		return line
	}
	return "nvidia-smi failed without output"
}

// sanitizeText makes arbitrary bytes printable: invalid UTF-8 and control
// characters become U+FFFD.
func sanitizeText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		// These are also the characters XML 1.0 forbids.
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return '\uFFFD'
		}
		return r
	}, s)
}

type smiLog struct {
	XMLName xml.Name `xml:"nvidia_smi_log"`
	Driver  string   `xml:"driver_version"`
	CUDA    string   `xml:"cuda_version"`
	GPUs    []smiGPU `xml:"gpu"`
}

type smiGPU struct {
	UUID        string `xml:"uuid"`
	ProductName string `xml:"product_name"`
	FBMemory    smiMem `xml:"fb_memory_usage"`
	// Drivers before the v6 DTD called frame-buffer memory memory_usage.
	LegacyMemory *smiMem `xml:"memory_usage"`
	Utilization  struct {
		GPU string `xml:"gpu_util"`
	} `xml:"utilization"`
	MIGMode struct {
		Current string `xml:"current_mig"`
	} `xml:"mig_mode"`
	MIGDevices []smiMIGDevice `xml:"mig_devices>mig_device"`
	Processes  []smiProcess   `xml:"processes>process_info"`
	// 331.x-era drivers listed processes under compute_processes.
	LegacyProcesses []smiProcess `xml:"compute_processes>process_info"`
}

type smiMem struct {
	Total string `xml:"total"`
	Used  string `xml:"used"`
}

// smiMIGDevice is one MIG device (a compute instance of a GPU instance)
// of a GPU in MIG mode. nvidia-smi gives its memory here but not its
// UUID, which only `nvidia-smi -L` prints (mig.go).
type smiMIGDevice struct {
	Index    string `xml:"index"`
	GI       string `xml:"gpu_instance_id"`
	CI       string `xml:"compute_instance_id"`
	FBMemory smiMem `xml:"fb_memory_usage"`
}

type smiProcess struct {
	// On a GPU in MIG mode, the MIG device the process runs in ("N/A"
	// otherwise).
	GI         string `xml:"gpu_instance_id"`
	CI         string `xml:"compute_instance_id"`
	PID        string `xml:"pid"`
	Type       string `xml:"type"`
	Name       string `xml:"process_name"`
	UsedMemory string `xml:"used_memory"`
}

// parseNvidiaSMIXML reads `nvidia-smi -q -x` output. Every process listed is
// kept whatever its type (C, G, C+G, M…): a graphics client holds memory and
// SM time as surely as a CUDA one, and placement should not put a job beside
// it unknowingly. Values nvidia-smi could not read ("N/A", "[Not Supported]",
// "Unknown Error"…) become nil.
func parseNvidiaSMIXML(data []byte) (versions smiVersions, gpus []inventory.GPU, err error) {
	doc, err := extractSMIDocument(data)
	if err != nil {
		return versions, nil, err
	}
	// Strict mode on purpose: lenient mode silently "repairs" mismatched or
	// truncated output into partial data. The one known defect of real output,
	// unescaped process names, is repaired beforehand.
	dec := xml.NewDecoder(bytes.NewReader(doc))
	// The bytes are already valid UTF-8 (see sanitizeXML) whatever the prolog
	// claims, so any declared encoding is read as is.
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var log smiLog
	if err := dec.Decode(&log); err != nil {
		return versions, nil, err
	}
	versions = smiVersions{Driver: strings.TrimSpace(log.Driver), CUDA: strings.TrimSpace(log.CUDA)}
	gpus = make([]inventory.GPU, 0, len(log.GPUs))
	var instances []inventory.GPU
	for i, g := range log.GPUs {
		mem := g.FBMemory
		if mem.Total == "" && mem.Used == "" && g.LegacyMemory != nil {
			mem = *g.LegacyMemory
		}
		procs := g.Processes
		if len(procs) == 0 {
			procs = g.LegacyProcesses
		}
		gpu := inventory.GPU{
			// nvidia-smi lists GPUs in its own index order and the XML has no
			// index element, so position is the index.
			Index:          i,
			UUID:           strings.TrimSpace(g.UUID),
			Name:           strings.TrimSpace(g.ProductName),
			MemoryUsedMiB:  parseMiB(mem.Used),
			MemoryTotalMiB: parseMiB(mem.Total),
			UtilizationPct: parsePercent(g.Utilization.GPU),
			MIG:            strings.EqualFold(strings.TrimSpace(g.MIGMode.Current), "Enabled"),
			Processes:      make([]inventory.Process, 0, len(procs)),
		}
		var mine []inventory.GPU // this GPU's MIG instances
		if gpu.MIG {
			mine = migInstances(gpu, g.MIGDevices)
		}
		for _, p := range procs {
			// An unreadable pid still means the GPU is in use, so the process
			// is kept with PID 0 rather than dropped.
			pid, _ := strconv.Atoi(strings.TrimSpace(p.PID))
			proc := inventory.Process{
				PID:           max(pid, 0),
				Command:       strings.TrimSpace(p.Name),
				UsedMemoryMiB: parseMiB(p.UsedMemory),
			}
			// A process in a MIG instance busies that instance, not its
			// siblings; one nvidia-smi does not place stays on the GPU.
			if k := instanceOf(mine, p.GI, p.CI); k >= 0 {
				mine[k].Processes = append(mine[k].Processes, proc)
				continue
			}
			gpu.Processes = append(gpu.Processes, proc)
		}
		gpus = append(gpus, gpu)
		instances = append(instances, mine...)
	}
	// The instances are numbered after every physical GPU, so that a
	// GPU's index stays nvidia-smi's (hosts file gpus:, --exclude).
	for k := range instances {
		instances[k].Index = len(gpus) + k
	}
	gpus = append(gpus, instances...)
	return versions, gpus, nil
}

// smiVersions are the driver's and CUDA's versions nvidia-smi names.
type smiVersions struct{ Driver, CUDA string }

// extractSMIDocument cuts the XML document out of combined stdout+stderr
// (nvidia-smi prints warnings such as "WARNING: infoROM is corrupted at gpu
// …" next to the XML) and repairs what real output is known to contain that
// XML forbids.
func extractSMIDocument(data []byte) ([]byte, error) {
	start := bytes.Index(data, []byte("<nvidia_smi_log"))
	if start < 0 {
		if line := firstMeaningfulLine(data); len(bytes.TrimSpace(data)) > 0 {
			return nil, fmt.Errorf("no <nvidia_smi_log> element; output begins %q", line)
		}
		return nil, errors.New("empty output")
	}
	if prolog := bytes.LastIndex(data[:start], []byte("<?xml")); prolog >= 0 {
		start = prolog
	}
	doc := data[start:]
	if end := bytes.LastIndex(doc, []byte("</nvidia_smi_log>")); end >= 0 {
		doc = doc[:end+len("</nvidia_smi_log>")]
	}
	// Dropping before sanitizing: sanitizeText walks every rune, and never
	// makes markup of what was not.
	return []byte(sanitizeText(string(dropUnread(escapeProcessNames(doc))))), nil
}

// unreadElements are children of <gpu> that parseNvidiaSMIXML never reads:
// nine tenths of a GPU's report (supported_clocks alone is a third), which
// encoding/xml tokenized for nothing, a third of `tfhive status`'s CPU at
// hundreds of hosts. None nests in itself or holds what is read.
var unreadElements = map[string]bool{}

func init() {
	for _, name := range []string{"supported_clocks", "pci", "clocks_event_reasons", "clocks_throttle_reasons",
		"remapped_rows", "ecc_errors", "retired_pages", "temperature", "gpu_power_readings", "module_power_readings",
		"power_readings", "clocks", "max_clocks", "max_customer_boost_clocks", "applications_clocks",
		"default_applications_clocks", "deferred_clocks", "clock_policy", "supported_gpu_target_temp", "voltage",
		"encoder_stats", "fbc_stats", "inforom_version", "gpu_operation_mode", "gsp_firmware_version", "device_attributes",
		"ecc_error_count", "bar1_memory_usage"} {
		unreadElements[name] = true
	}
}

// dropUnread cuts the unread elements out of doc, each from its start tag
// to its end tag, before the strict decoder sees it. It runs after
// escapeProcessNames, so every '<' left is markup. An element without its
// end tag (truncated output) is left for the decoder to refuse; what is
// malformed inside a dropped element goes unnoticed, and none of it was
// read.
func dropUnread(doc []byte) []byte {
	var out []byte
	from := 0 // what is kept of doc starts here
	for i := 0; ; {
		j := bytes.IndexByte(doc[i:], '<')
		if j < 0 {
			break
		}
		i += j + 1
		k := bytes.IndexByte(doc[i:], '>')
		if k < 0 {
			break
		}
		name := doc[i : i+k]
		if !unreadElements[string(name)] {
			continue
		}
		end := bytes.Index(doc[i+k:], []byte("</"+string(name)+">"))
		if end < 0 {
			break
		}
		if out == nil {
			out = make([]byte, 0, len(doc)/4)
		}
		out = append(out, doc[from:i-1]...)
		i += k + end + len(name) + 3
		from = i
	}
	if out == nil {
		return doc
	}
	return append(out, doc[from:]...)
}

// escapeProcessNames escapes markup characters inside <process_name>
// elements. Process names are command lines, which may hold '<', '>' or '&'
// (shell redirections, query strings); already-escaped entities are kept, so
// this is harmless when nvidia-smi did escape.
func escapeProcessNames(doc []byte) []byte {
	const open, close = "<process_name>", "</process_name>"
	var out bytes.Buffer
	for {
		i := bytes.Index(doc, []byte(open))
		if i < 0 {
			break
		}
		i += len(open)
		j := bytes.Index(doc[i:], []byte(close))
		if j < 0 {
			break
		}
		out.Write(doc[:i])
		out.WriteString(escapeText(doc[i : i+j]))
		doc = doc[i+j:]
	}
	if out.Len() == 0 {
		return doc
	}
	out.Write(doc)
	return out.Bytes()
}

var xmlEntityPrefixes = []string{"&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#"}

func escapeText(b []byte) string {
	var sb strings.Builder
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '<':
			sb.WriteString("&lt;")
		case '>':
			sb.WriteString("&gt;")
		case '&':
			known := false
			for _, p := range xmlEntityPrefixes {
				if bytes.HasPrefix(b[i:], []byte(p)) {
					known = true
					break
				}
			}
			if known {
				sb.WriteByte('&')
			} else {
				sb.WriteString("&amp;")
			}
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// parseMiB reads "40960 MiB". Other units are converted in case a driver
// ever uses them; anything else (N/A and its variants) is unknown.
func parseMiB(s string) *int {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), " ")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return nil
	}
	switch strings.TrimSpace(unit) {
	case "MiB", "":
	case "GiB":
		n *= 1024
	case "KiB":
		n /= 1024
	default:
		return nil
	}
	return &n
}

// parsePercent reads "85 %" (and "85%").
func parsePercent(s string) *int {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return nil
	}
	return &n
}
