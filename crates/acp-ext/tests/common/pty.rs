//! The `acp-ext` binary in a pseudo-terminal, as a person runs it.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use super::EXE;

/// The binary in a pseudo-terminal, its screen read through a terminal
/// emulator.
pub struct Pty {
    pub screen: Arc<Mutex<vt100::Parser>>,
    /// Every byte the binary wrote, as it came.
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Box<dyn Write + Send>,
    pub child: Box<dyn portable_pty::Child + Send + Sync>,
}

impl Pty {
    pub fn start(args: &[&str], cols: u16, rows: u16) -> Pty {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(EXE);
        cmd.args(args);
        cmd.env("TERM", "xterm-256color");
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().unwrap();
        let writer = pty.master.take_writer().unwrap();
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZeroU16::new(rows).unwrap(),
            std::num::NonZeroU16::new(cols).unwrap(),
            0,
        )));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (s, r) = (screen.clone(), raw.clone());
        std::thread::spawn(move || {
            let _master = pty.master;
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                r.lock().unwrap().extend_from_slice(&buf[..n]);
                s.lock().unwrap().process(&buf[..n]);
            }
        });
        Pty {
            screen,
            raw,
            writer,
            child,
        }
    }

    /// Every byte written so far, escapes included, as text.
    pub fn raw(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().unwrap()).into_owned()
    }

    pub fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// Waits until the screen shows `text`.
    pub fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let c = self.contents();
            if c.contains(text) {
                return c;
            }
            assert!(
                Instant::now() < deadline,
                "screen never showed {text:?}:\n{c}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
    }

    pub fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "{EXE} did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
