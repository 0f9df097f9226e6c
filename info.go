package goshmem

// Library information (shmem_info_get_version, shmem_info_get_name) and
// the profiling hook (shmem_pcontrol). They need no PE: a program may
// call them before starting goshmem.

// MajorVersion and MinorVersion are the version of the OpenSHMEM
// specification the API follows (SHMEM_MAJOR_VERSION,
// SHMEM_MINOR_VERSION); SpecVersion is the same as a string.
const (
	MajorVersion = 1
	MinorVersion = 5
)

// MaxNameLen is SHMEM_MAX_NAME_LEN: a C name buffer holds at most this
// many bytes, its terminating NUL included, so VendorString is shorter.
const MaxNameLen = 256

// VendorString is the vendor string InfoGetName returns
// (SHMEM_VENDOR_STRING).
const VendorString = "goshmem " + Version

// InfoGetVersion returns the major and minor version of the OpenSHMEM
// specification the library follows: 1, 5 (shmem_info_get_version).
func InfoGetVersion() (major, minor int) { return MajorVersion, MinorVersion }

// InfoGetName returns the vendor string, VendorString, shorter than
// MaxNameLen bytes (shmem_info_get_name).
func InfoGetName() string { return VendorString }

// PControl sets the profiling level (shmem_pcontrol). goshmem has no
// profiling or tracing layer, and the specification says a library
// makes no use of the call: it returns at once, whatever level and
// arguments it is given, so that programs written for profiling
// libraries run unchanged. The specification's recommended levels are
// <= 0 off, 1 on (the default), 2 on with buffers flushed, and above 2
// library-defined, with args.
func PControl(level int, args ...any) {}
