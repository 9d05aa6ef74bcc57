package probe

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tfhive/tfhive/probe/inventory"
)

// markPolicy starts the policy section (scripts/policy.sh), which follows
// the code section.
const markPolicy = "@@tfhive-policy"

// DefaultPolicyFile is where a host's policy lives unless its sessions'
// $TFHIVE_POLICY says otherwise.
const DefaultPolicyFile = "/etc/tfhive/policy.yaml"

// cutPolicy takes the policy section off the end of the code section.
func cutPolicy(code []byte) (rest, policy []byte) {
	if bytes.HasPrefix(code, []byte(markPolicy+"\n")) {
		return nil, code[len(markPolicy)+1:]
	}
	if bytes.Equal(code, []byte(markPolicy)) {
		return nil, nil
	}
	i := bytes.LastIndex(code, []byte("\n"+markPolicy+"\n"))
	if i < 0 {
		if bytes.HasSuffix(code, []byte("\n"+markPolicy)) {
			return code[:len(code)-len(markPolicy)-1], nil
		}
		return code, nil
	}
	return code[:i+1], code[i+1+len(markPolicy)+1:]
}

// MaxPolicySize bounds a policy file (scripts/policy.sh's $pbytes): one
// over it is refused whole, never read in part (a rule past a cut would be
// lost, and the host's rules fail open).
const MaxPolicySize = 256 << 10

// policySection is the policy section, read.
type policySection struct {
	path      string
	size      int64 // -1: unknown
	file, dir statLine
	ctx       inventory.PolicyContext
	text      []string
}

type statLine struct {
	ok   bool
	uid  int
	mode uint32
	kind string
}

func parseStat(s string) statLine {
	f := strings.SplitN(s, " ", 3)
	if len(f) != 3 {
		return statLine{}
	}
	uid, err1 := strconv.Atoi(f[0])
	mode, err2 := strconv.ParseUint(f[1], 8, 32)
	return statLine{ok: err1 == nil && err2 == nil, uid: uid, mode: uint32(mode), kind: f[2]}
}

func readPolicySection(b []byte) (policySection, bool) {
	ps := policySection{size: -1}
	ps.ctx.Members = map[string][]string{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(line, "\n")
		if t, ok := strings.CutPrefix(line, "|"); ok {
			ps.text = append(ps.text, t)
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "p":
			ps.path = v
		case "s":
			ps.file = parseStat(v)
		case "z":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
				ps.size = n
			}
		case "d":
			ps.dir = parseStat(v)
		case "u":
			f := strings.Fields(v)
			if len(f) > 0 {
				ps.ctx.User, ps.ctx.Groups = f[0], f[1:]
			}
		case "t":
			f := strings.Fields(v)
			if len(f) == 3 {
				d, _ := strconv.Atoi(f[0])
				h, _ := strconv.Atoi(strings.TrimLeft(f[1], "0"))
				m, _ := strconv.Atoi(strings.TrimLeft(f[2], "0"))
				ps.ctx.Weekday, ps.ctx.Minute = d, h*60+m
			}
		case "g":
			// getent: name:password:gid:member,member
			f := strings.Split(v, ":")
			if len(f) == 4 && f[3] != "" {
				ps.ctx.Members[f[0]] = strings.Split(f[3], ",")
			}
		}
	}
	return ps, ps.path != ""
}

// policyOf turns the section into the host's policy: nil and a warning
// when the file may not be trusted (anyone but root could have written
// it), an error naming file and line when it is malformed.
func policyOf(b []byte) (p *inventory.Policy, ctx *inventory.PolicyContext, warning, perr string) {
	ps, ok := readPolicySection(b)
	if !ok {
		return nil, nil, "", ""
	}
	if why := untrusted(ps); why != "" {
		return nil, nil, ps.path + " is ignored: " + why, ""
	}
	if ps.size < 0 || ps.size > MaxPolicySize {
		// Root's file, not read whole: its rules are unknown.
		what := "its size is unknown"
		if ps.size > MaxPolicySize {
			what = fmt.Sprintf("it is %d bytes, more than the %d KiB a policy file may have", ps.size, MaxPolicySize>>10)
		}
		return nil, nil, "", ps.path + ": " + what + "; it is refused whole, never read in part"
	}
	pol, err := ParsePolicy(ps.path, []byte(strings.Join(ps.text, "\n")+"\n"))
	if err != nil {
		return nil, nil, "", err.Error()
	}
	return pol, &ps.ctx, "", ""
}

// untrusted says why a policy file is not honoured, "" when it is.
func untrusted(ps policySection) string {
	switch {
	case !ps.file.ok:
		return "it cannot be read"
	case ps.file.kind != "regular file" && ps.file.kind != "regular empty file":
		return "it is a " + ps.file.kind + ", not a regular file"
	case ps.file.uid != 0:
		return fmt.Sprintf("it is owned by uid %d, not root", ps.file.uid)
	case ps.file.mode&0o022 != 0:
		return fmt.Sprintf("group or others may write it (mode %03o)", ps.file.mode&0o777)
	case !ps.dir.ok || ps.dir.uid != 0:
		return "its directory is not owned by root"
	case ps.dir.mode&0o022 != 0:
		return fmt.Sprintf("group or others may write its directory (mode %03o)", ps.dir.mode&0o777)
	case ps.text == nil:
		return "it cannot be read"
	}
	return ""
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// ParsePolicy reads a policy file strictly: an unknown key, a wrong type
// or a value out of range is an error "FILE:LINE: why".
func ParsePolicy(file string, data []byte) (*inventory.Policy, error) {
	var p inventory.Policy
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil && err != io.EOF { // EOF: an empty file, no rules
		msg := err.Error()
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			msg = te.Errors[0]
		}
		msg = strings.TrimPrefix(msg, "yaml: ")
		line := "1"
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line = m[1]
			msg = strings.TrimPrefix(strings.TrimPrefix(yamlLineRE.ReplaceAllString(msg, ""), ":"), " ")
			msg = strings.TrimSpace(strings.TrimPrefix(msg, ":"))
		}
		return nil, fmt.Errorf("%s:%s: %s", file, line, msg)
	}
	var root yaml.Node
	yaml.Unmarshal(data, &root)
	bad := func(why string, path ...any) error {
		return fmt.Errorf("%s:%d: %s", file, lineOf(&root, path...), why)
	}
	for _, kind := range []struct {
		name string
		m    map[string]int
	}{{"users", p.Limits.Users}, {"groups", p.Limits.Groups}} {
		for _, k := range slices.Sorted(mapKeysOf(kind.m)) {
			if kind.m[k] < 0 {
				return nil, bad(fmt.Sprintf("limits: %s: %s: a limit must be 0 or more", kind.name, k), "limits", kind.name, k)
			}
		}
	}
	for i, r := range p.Reserved {
		switch {
		case r.Group == "":
			return nil, bad("reserved: every entry needs a group", "reserved", i)
		case len(r.GPUs) == 0:
			return nil, bad("reserved: every entry needs gpus", "reserved", i)
		case slices.ContainsFunc(r.GPUs, func(g int) bool { return g < 0 }):
			return nil, bad("reserved: gpus are indexes, 0 or more", "reserved", i, "gpus")
		}
		if _, _, ok := inventory.ParseHours(r.Hours); !ok {
			return nil, bad(fmt.Sprintf("reserved: hours %q: want HH:MM-HH:MM", r.Hours), "reserved", i, "hours")
		}
		for _, d := range r.Days {
			if inventory.DayNumber(d) == 0 {
				return nil, bad(fmt.Sprintf("reserved: day %q: want mon, tue, wed, thu, fri, sat or sun", d), "reserved", i, "days")
			}
		}
	}
	if err := checkReservationPolicy(p.Reservations, bad); err != nil {
		return nil, err
	}
	if err := checkIdle(p.Idle, bad); err != nil {
		return nil, err
	}
	p.File = file
	return &p, nil
}

func mapKeysOf(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// lineOf is the line of the node at path (map keys, sequence indexes),
// or of the deepest one found.
func lineOf(n *yaml.Node, path ...any) int {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := max(n.Line, 1)
	for _, p := range path {
		var next *yaml.Node
		switch k := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == k {
						next = n.Content[i+1]
						line = n.Content[i].Line
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && k < len(n.Content) {
				next = n.Content[k]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}
