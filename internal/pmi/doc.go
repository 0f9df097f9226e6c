// Package pmi is a client of the Process Management Interface that
// cluster launchers serve to the processes they start: the PMI-1
// "simple" wire protocol and the PMI-2 wire protocol, as Slurm's
// mpi/pmi2 plugin (srun --mpi=pmi2) and MPICH's hydra (mpiexec) serve
// them. goshmem uses it to wire a job up under those launchers: every
// process learns its rank and the job's size, publishes what the others
// need (host name, process id, rendezvous tokens) in the launcher's
// key-value space, waits at a fence, and reads what the others
// published.
//
// # Connection
//
// The launcher passes a connected socket in PMI_FD (both launchers do
// by default), or an address in PMI_PORT (host:port; with PMI_ID the
// PMI-1 "initack" handshake first). PMI_RANK and PMI_SIZE give the rank
// and size; PMI-2's fullinit confirms them.
//
// # Protocols
//
// Both begin with one PMI-1 line, "cmd=init pmi_version=V
// pmi_subversion=S". PMI-1 then exchanges newline-terminated lines of
// space-separated key=value tokens; PMI-2 exchanges commands of the form
// "cmd=name;key=value;...;" preceded by their length in exactly six
// ASCII characters (hydra pads them on the left with blanks, Slurm on
// the right), with semicolons in values doubled. SHMEM_PMI chooses: "pmi2", "pmi1", or "auto" (the default),
// which asks for PMI-2 and falls back to PMI-1 on the same connection
// when the server answers the init with another version or an error.
//
// # Limits and encoding
//
// The servers bound a PMI-1 line to 1024 bytes (and tell the longest
// key and value with get_maxes); PMI-2 bounds keys to 64 and values to
// 1024 bytes. Slurm's PMI-1 handler reads one request per read(2), so
// every request goes out in one write. Keys are put once per job. So
// Put takes any bytes: it encodes them in base64url (letters, digits,
// '-', '_': printable, no space, '=' or ';'), prefixes the number of
// pieces, and splits what does not fit one value into further keys
// (key, key.1, key.2, ...); Get reassembles them. Client keys live in
// a namespace of the putting rank ("gs<rank>.<key>"), so ranks never
// collide.
//
// # Process mapping
//
// PMI_process_mapping (a PMI-2 job attribute; a key of the PMI-1 key
// space under hydra) describes which node each rank runs on, as
// "(vector,(start,nodes,ranks-per-node),...)"; ParseMapping reads it.
// A launcher that does not provide it leaves the caller to group ranks
// by host name through the key-value space.
package pmi
