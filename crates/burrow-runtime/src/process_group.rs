//! Kills a child's whole process group with one system call: hooks and MCP servers start their commands in groups of their own so that what those commands start goes with them.

/// Sends SIGKILL to the process group led by `pid` (a child started with
/// `process_group(0)`, so its pid is its group's id).
///
/// A group already gone is not an error worth reporting: the caller only
/// needs it gone. Pids 0 and 1 name no child's group and are never signalled
/// (`kill(-1)` would signal every process we may signal).
pub(crate) fn kill_group(pid: u32) {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .filter(|&p| p > 1)
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
}

#[cfg(test)]
mod tests {
    use super::kill_group;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    #[test]
    fn a_group_and_the_process_its_leader_started_are_killed() {
        // The leader starts a grandchild in its group and prints its pid.
        let mut leader = Command::new("sh")
            .arg("-c")
            .arg("sleep 60 & echo $!; wait")
            .process_group(0)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(leader.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        kill_group(leader.id());
        let status = leader.wait().unwrap();
        assert!(!status.success(), "the leader was killed: {status:?}");
        let deadline = Instant::now() + Duration::from_secs(10);
        // A killed grandchild is reparented and reaped; until then it is a zombie.
        while std::path::Path::new(&format!("/proc/{grandchild}/stat")).exists()
            && !std::fs::read_to_string(format!("/proc/{grandchild}/stat"))
                .unwrap_or_default()
                .contains(") Z ")
        {
            assert!(
                Instant::now() < deadline,
                "the grandchild {grandchild} outlived its group"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn pids_that_name_no_childs_group_are_never_signalled() {
        // Would kill every process we may signal, the test runner included.
        kill_group(1);
        kill_group(0);
        kill_group(u32::MAX);
    }
}
