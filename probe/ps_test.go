package probe

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

func TestGoldenPS(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testdataDir, "ps", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ps goldens: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			checkGolden(t, path, parsePS(readTestdata(t, "ps/"+filepath.Base(path))))
		})
	}
}

func TestParsePS(t *testing.T) {
	got := parsePS(readTestdata(t, "ps/odd.txt"))
	want := map[int]psEntry{
		2114: {"root", "/usr/lib/xorg/Xorg vt1 -displayfd 3 -auth /run/user/1000/gdm/Xauthority -nolisten tcp"},
		// A name too long for the column is printed as the numeric uid.
		73310: {"1000012345", "/home/李雷/venv/bin/python3 -c import torch;  print(torch.cuda.device_count())"},
		// Exactly 32 characters: one space separates it from the command.
		90533:   {"averyveryverylongusername.ldap01", "blender -b scene.blend -o //render/frame_#### -a"},
		90412:   {"dave", "[python3] <defunct>"},
		4194301: {"eve", "/usr/bin/gnome-shell"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsePS(odd.txt) =\n%#v\nwant\n%#v", got, want)
	}

	for name, in := range map[string]string{
		"empty":         "",
		"only junk":     "error: list of process IDs must follow -p\n\nUsage:\n ps [options]\n",
		"pid, no user":  "   1234\n",
		"negative pid":  "  -1 root init\n",
		"non-numeric":   "  PID USER COMMAND\n",
		"whitespace":    " \t \n",
		"pid then tabs": "12\t\t\n",
	} {
		if got := parsePS([]byte(in)); len(got) != 0 {
			t.Errorf("%s: parsePS(%q) = %v, want empty", name, in, got)
		}
	}

	got = parsePS([]byte("      7 root\n"))
	if want := (map[int]psEntry{7: {"root", ""}}); !reflect.DeepEqual(got, want) {
		t.Errorf("no args: got %v, want %v", got, want)
	}
}

func TestFillOwners(t *testing.T) {
	_, gpus, err := parseNvidiaSMIXML(readTestdata(t, "nvidia-smi/busy-4gpu.xml"))
	if err != nil {
		t.Fatal(err)
	}
	fillOwners(gpus, parsePS(readTestdata(t, "ps/busy-4gpu.txt")))

	want := map[int]inventory.Process{
		48213: {PID: 48213, User: "bob", Command: "python train.py --model resnet50 --batch-size 256 --data /scratch/imagenet", UsedMemoryMiB: ip(10910)},
		// Exited between nvidia-smi and ps: owner unknown, nvidia-smi's name kept.
		51877: {PID: 51877, User: "", Command: "/opt/conda/bin/python3.11", UsedMemoryMiB: ip(6284)},
		51902: {PID: 51902, User: "carol", Command: "ray::RolloutWorker.sample(batch=512, envs=8) [R&D]", UsedMemoryMiB: ip(11414)},
	}
	seen := 0
	for _, g := range gpus {
		for _, p := range g.Processes {
			seen++
			if w, ok := want[p.PID]; !ok {
				t.Errorf("unexpected process %+v", p)
			} else if !reflect.DeepEqual(p, w) {
				t.Errorf("GPU %d process %d = %+v, want %+v", g.Index, p.PID, p, w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("saw %d processes, want %d", seen, len(want))
	}
	if got := gpus[1].Processes[0].User; got != "bob" {
		t.Errorf("fillOwners did not write through to the caller's slice: User = %q", got)
	}
}

func TestFillOwnersEdgeCases(t *testing.T) {
	gpus := []inventory.GPU{
		{Processes: []inventory.Process{
			{PID: 0, Command: "Xorg"},    // unreadable pid: never matched
			{PID: 10, Command: "python"}, // ps knows the user but not the args
		}},
		{Processes: []inventory.Process{}},
		{},
	}
	fillOwners(gpus, map[int]psEntry{0: {"root", "init"}, 10: {"alice", ""}})
	want := []inventory.Process{{PID: 0, Command: "Xorg"}, {PID: 10, User: "alice", Command: "python"}}
	if !reflect.DeepEqual(gpus[0].Processes, want) {
		t.Errorf("got %+v, want %+v", gpus[0].Processes, want)
	}
	fillOwners(nil, nil) // must not panic
}
