package probe

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Cutting the unread elements changes nothing that is read, on every
// golden report, and leaves a small part of it.
func TestDropUnreadKeepsWhatIsRead(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testdataDir, "nvidia-smi", "*.xml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("golden reports: %v %v", files, err)
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := escapeProcessNames(data)
		var whole, cut smiLog
		if err := xml.Unmarshal(doc, &whole); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		dropped := dropUnread(doc)
		if err := xml.Unmarshal(dropped, &cut); err != nil {
			t.Fatalf("%s: after dropUnread: %v", path, err)
		}
		if !reflect.DeepEqual(whole, cut) {
			t.Errorf("%s: dropUnread changed what is read:\n%+v\nwant\n%+v", path, cut, whole)
		}
		if len(dropped)*3 > len(doc) {
			t.Errorf("%s: %d of %d bytes kept, want under a third", path, len(dropped), len(doc))
		}
		if bytes.Contains(dropped, []byte("<supported_clocks>")) {
			t.Errorf("%s: supported_clocks kept", path)
		}
	}
}

// An unread element cut short is left whole for the strict decoder to
// refuse, and a start tag with attributes or a name that merely begins
// like an unread one is kept.
func TestDropUnreadEdges(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<gpu><pci><bus>1</bus></pci><uuid>u</uuid></gpu>", "<gpu><uuid>u</uuid></gpu>"},
		{"<gpu><uuid>u</uuid><pci><bus>1</bus>", "<gpu><uuid>u</uuid><pci><bus>1</bus>"},
		{"<gpu><pci_x>1</pci_x><pci a=\"1\">2</pci></gpu>", "<gpu><pci_x>1</pci_x><pci a=\"1\">2</pci></gpu>"},
		{"<a><clocks>1</clocks><max_clocks>2</max_clocks><clocks>3</clocks></a>", "<a></a>"},
		{"no markup", "no markup"},
	} {
		if got := string(dropUnread([]byte(tc.in))); got != tc.want {
			t.Errorf("dropUnread(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var log smiLog
	if err := xml.Unmarshal(dropUnread([]byte("<nvidia_smi_log><gpu><supported_clocks><x>")), &log); err == nil {
		t.Error("a report cut inside an unread element decoded without error")
	}
}
