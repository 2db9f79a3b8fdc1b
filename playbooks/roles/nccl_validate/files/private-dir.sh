#!/bin/sh
# Makes the validation's working folder on a node private to the user running the play (mode 0700) and never uses
# one that another local user made. The folder's name is fixed (the mpirun hostfile and the incast receiver's logs
# are named in the plan's commands), so another user could make it first, own it, and swap a log for a link to any
# file the run then writes as root (issue 34, finding 1). A folder owned by us, not a link, mode 0700 cannot be
# written into, renamed or replaced by anyone else (/tmp is sticky: only the owner or root may rename its entries).
#   - absent: made with mkdir(2) (fails on anything already there, a link included; never follows one);
#   - ours (a real folder, our uid): kept, set to 0700;
#   - anything else: as root, renamed aside (rename(2) moves the entry, never what a link points to) and made afresh;
#     as another user, refused with the owner named.
# source: POSIX mkdir(2) EEXIST "path names an existing file, including a symbolic link"; GNU stat(1) (-c %u, no -L:
# the link itself); GNU mv(1) -T; Linux Documentation/admin-guide/sysctl/fs.rst (protected_symlinks covers sticky
# world-writable folders only, not a folder another user owns).
set -eu
d=$1
me=$(id -u)
parent=$(dirname -- "$d")
[ -d "$parent" ] || mkdir -p -- "$parent"
if mkdir -m 0700 -- "$d" 2>/dev/null; then
    exit 0
fi
if [ ! -L "$d" ] && [ -d "$d" ] && [ "$(stat -c %u -- "$d")" = "$me" ]; then
    chmod 0700 -- "$d"
    exit 0
fi
owner=$(stat -c '%U (uid %u), %F' -- "$d")
if [ "$me" = 0 ]; then
    aside="$d.untrusted.$(date +%s).$$"
    mv -T -- "$d" "$aside"
    if ! mkdir -m 0700 -- "$d"; then
        echo "rdmakit: $d was made again by someone else while it was being replaced; run the validation again" >&2
        exit 1
    fi
    echo "rdmakit: $d belonged to $owner, not root: moved aside to $aside, a private one made in its place" >&2
    exit 0
fi
echo "rdmakit: $d belongs to $owner, not to uid $me who runs the validation: another local user may have made it" \
    "to read or redirect the run's files. Remove it as root, then run the validation again." >&2
exit 1
