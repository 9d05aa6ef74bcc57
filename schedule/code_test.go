package schedule

import (
	"errors"
	"slices"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

func codeAt(dir string, present bool) hostOpt {
	return func(h *inventory.HostInventory) { h.CodeDir, h.CodePresent = dir, present }
}

func TestMakeCode(t *testing.T) {
	code := &Code{Hash: "abc", Bytes: 2048, Files: 3}
	for _, fw := range []string{FrameworkTF, FrameworkTorch} {
		p, err := Make(inv(
			host("a", 1, codeAt("/home/me/.cache/tfhive/code/abc", true)),
			host("b", 1, codeAt("/u/me/.cache/tfhive/code/abc", false)),
			host("c", 0, codeAt("/c/abc", false)), // no GPU: no task
		), req(func(r *Request) {
			r.Framework, r.Workers, r.Code = fw, 2, code
			r.Command = []string{"python", "{code_dir}/train.py", "--out={code_dir}/../x"}
		}))
		if err != nil {
			t.Fatal(fw, err)
		}
		want := []CodeHost{{"a", "/home/me/.cache/tfhive/code/abc", true}, {"b", "/u/me/.cache/tfhive/code/abc", false}}
		if p.Code == nil || p.Code.Code != *code || !slices.Equal(p.Code.Hosts, want) {
			t.Fatalf("%s: code %+v, want hosts %+v", fw, p.Code, want)
		}
		for _, task := range p.Tasks {
			dir := p.Code.Dir(task.Host)
			if task.Env["TFHIVE_CODE_DIR"] != dir || !slices.Equal(task.Argv, []string{"python", dir + "/train.py", "--out=" + dir + "/../x"}) {
				t.Errorf("%s: %s on %s: env %q, argv %q", fw, task.ID, task.Host, task.Env["TFHIVE_CODE_DIR"], task.Argv)
			}
		}
	}
}

func TestMakeWithoutCode(t *testing.T) {
	p, err := Make(inv(host("a", 1)), req(nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Tasks[0].Env["TFHIVE_CODE_DIR"]; ok || p.Code != nil {
		t.Errorf("a plan without --sync has code %+v, env %v", p.Code, p.Tasks[0].Env)
	}
	r := req(func(r *Request) { r.Command = []string{"python", "{code_dir}/train.py"} })
	var ue *UsageError
	if err := r.Validate(); !errors.As(err, &ue) || ue.Msg != "placeholder {code_dir} needs --sync" {
		t.Errorf("{code_dir} without --sync: %v", err)
	}
	// {{code_dir}} is a literal and needs nothing.
	r.Command = []string{"echo", "{{code_dir}}"}
	if err := r.Validate(); err != nil {
		t.Errorf("{{code_dir}}: %v", err)
	}
}

func TestMakeCodeHostSilent(t *testing.T) {
	_, err := Make(inv(host("a", 1)), req(func(r *Request) { r.Code = &Code{Hash: "abc"} }))
	if err == nil || err.Error() != "a did not say where its code cache is" {
		t.Errorf("err %v", err)
	}
}
