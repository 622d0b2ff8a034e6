//! Who owns a sandbox container (host, boot, process id and start time, as labels), and the sweep that removes containers whose owner is gone.
//!
//! A `burrow` killed with SIGKILL cannot remove its containers, and each one
//! holds memory and processes until someone does. So every container carries
//! its owner: the host (`/etc/machine-id`, else the host name), the boot
//! (`/proc/sys/kernel/random/boot_id`), the process id and the process's
//! start time (field 22 of `/proc/self/stat`, in clock ticks since boot; a
//! reused pid has another). [`remove_orphans`] removes the sandbox
//! containers of this host whose owner is gone: another boot, a pid that is
//! not alive, or one alive with another start time. Containers of other
//! hosts (an engine shared over TCP) and containers without owner labels
//! are left alone.

use std::collections::HashMap;

use bollard::Docker;
use bollard::query_parameters::ListContainersOptionsBuilder;
use burrow_backend::Result;

use crate::engine;
use crate::options::SANDBOX_LABEL;
use crate::sandbox::remove;

/// Label: the owner's host (machine id, or host name).
pub const OWNER_HOST_LABEL: &str = "burrow.owner.host";
/// Label: the owner's boot id.
pub const OWNER_BOOT_LABEL: &str = "burrow.owner.boot";
/// Label: the owner's process id.
pub const OWNER_PID_LABEL: &str = "burrow.owner.pid";
/// Label: the owner's process start time (clock ticks since boot).
pub const OWNER_START_LABEL: &str = "burrow.owner.start";

/// The owner of a container, as its labels say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    pub host: String,
    pub boot: String,
    pub pid: u32,
    pub start: u64,
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// This host's identity: its machine id, else its host name.
fn host() -> Option<String> {
    read_trimmed("/etc/machine-id")
        .or_else(|| read_trimmed("/proc/sys/kernel/hostname"))
        .or_else(|| read_trimmed("/etc/hostname"))
}

/// The start time (field 22 of `/proc/PID/stat`) of process `pid`, if it is alive.
fn start_time(pid: &str) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

impl Owner {
    /// This process, when the host exposes what identifies it (Linux `/proc`).
    pub fn current() -> Option<Owner> {
        Some(Owner {
            host: host()?,
            boot: read_trimmed("/proc/sys/kernel/random/boot_id")?,
            pid: std::process::id(),
            start: start_time("self")?,
        })
    }

    /// The labels naming this owner.
    pub fn labels(&self) -> [(String, String); 4] {
        [
            (OWNER_HOST_LABEL.to_owned(), self.host.clone()),
            (OWNER_BOOT_LABEL.to_owned(), self.boot.clone()),
            (OWNER_PID_LABEL.to_owned(), self.pid.to_string()),
            (OWNER_START_LABEL.to_owned(), self.start.to_string()),
        ]
    }

    /// The owner a container's labels name, when they name one completely.
    fn from_labels(labels: &HashMap<String, String>) -> Option<Owner> {
        Some(Owner {
            host: labels.get(OWNER_HOST_LABEL)?.clone(),
            boot: labels.get(OWNER_BOOT_LABEL)?.clone(),
            pid: labels.get(OWNER_PID_LABEL)?.parse().ok()?,
            start: labels.get(OWNER_START_LABEL)?.parse().ok()?,
        })
    }

    /// True when `self` (a container's owner) is gone, judged from `me` (this process, on this host).
    fn is_gone(&self, me: &Owner) -> bool {
        if self.host != me.host {
            return false;
        }
        self.boot != me.boot || start_time(&self.pid.to_string()) != Some(self.start)
    }
}

/// Removes every sandbox container of this host whose owner process is gone
/// (another boot, a pid not alive, or alive with another start time);
/// returns how many. Containers of other hosts and containers without owner
/// labels are left alone (sweep those with [`crate::remove_labelled`]).
/// On a host without `/proc` nothing can be judged and nothing is removed.
pub async fn remove_orphans(docker: &Docker) -> Result<usize> {
    let Some(me) = Owner::current() else {
        return Ok(0);
    };
    let filters = vec![
        format!("{SANDBOX_LABEL}=1"),
        format!("{OWNER_HOST_LABEL}={}", me.host),
    ];
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&HashMap::from([("label", filters)]))
        .build();
    let containers = docker
        .list_containers(Some(options))
        .await
        .map_err(|e| engine::failure("list sandbox containers", e))?;
    let mut removed = 0;
    for c in containers {
        let (Some(id), Some(labels)) = (c.id, c.labels) else {
            continue;
        };
        if Owner::from_labels(&labels).is_some_and(|owner| owner.is_gone(&me)) {
            remove(docker, &id).await?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_its_own_live_owner() {
        let me = Owner::current().expect("Linux /proc");
        assert_eq!(me.pid, std::process::id());
        assert!(!me.is_gone(&me));
        let labels: HashMap<String, String> = me.labels().into_iter().collect();
        assert_eq!(Owner::from_labels(&labels), Some(me.clone()));
        let restarted = Owner {
            start: me.start + 1,
            ..me.clone()
        };
        assert!(restarted.is_gone(&me));
        let rebooted = Owner {
            boot: "another".to_owned(),
            ..me.clone()
        };
        assert!(rebooted.is_gone(&me));
        let elsewhere = Owner {
            host: "another".to_owned(),
            pid: u32::MAX,
            ..me.clone()
        };
        assert!(
            !elsewhere.is_gone(&me),
            "another host's containers are not judged"
        );
    }
}
