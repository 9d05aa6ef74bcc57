package probe

import "github.com/tfhive/tfhive/probe/inventory"

// The probe fills the inventory's types; inside this package they keep
// their short names.
type (
	Host          = inventory.Host
	Inventory     = inventory.Inventory
	HostInventory = inventory.HostInventory
	GPU           = inventory.GPU
	Process       = inventory.Process
	Claim         = inventory.Claim
	HostError     = inventory.HostError
	ErrorKind     = inventory.ErrorKind
)

const (
	ErrTimeout        = inventory.ErrTimeout
	ErrRefused        = inventory.ErrRefused
	ErrDNS            = inventory.ErrDNS
	ErrAuth           = inventory.ErrAuth
	ErrHostKeyUnknown = inventory.ErrHostKeyUnknown
	ErrHostKeyChanged = inventory.ErrHostKeyChanged
	ErrSSH            = inventory.ErrSSH
	ErrCommand        = inventory.ErrCommand
)
