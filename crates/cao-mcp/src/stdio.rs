//! The stdio transport of `cao-mcp-server`: rmcp's newline-delimited JSON-RPC transport behind a relay that
//! answers what rmcp would drop.
//!
//! rmcp ignores a line that is not JSON (no id to answer, and the other MCP SDKs do the same), so a client that
//! sent one waits for its timeout. JSON-RPC 2.0 (section 5.1) says such a request is answered with a parse error
//! whose `id` is `null`: the relay reads every line first and answers
//! `{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, ...}}` for one that is not a JSON text, and
//! `-32600` (invalid request) for one longer than [`MAX_LINE_BYTES`], which is dropped unread, and for a JSON text
//! that is not a JSON-RPC 2.0 message (not an object, no `"jsonrpc": "2.0"`, neither a string `method` nor a
//! response's `result`/`error` with an `id`): its `id` when it has a string or number one, else `null`. rmcp
//! answers those without any `id` member, which section 5 forbids. Every other line is passed to rmcp unchanged; an
//! error response rmcp still writes without an `id` gets `"id": null` on its way out.
//!
//! Invariants:
//! - One task writes the output, a whole line at a time, so the relay's answers never split one of rmcp's.
//! - End of input ends the rmcp service as before; [`StdioRelay::finish`] waits until every line written so far
//!   is on the output.
//! - Nothing here writes anything but JSON-RPC lines to the output.

use rmcp::RoleServer;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The longest line read (16 MiB, rmcp's own default line limit); a longer one is answered `-32600` and dropped.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// JSON-RPC 2.0's parse error code.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0's invalid request code.
pub(crate) const INVALID_REQUEST: i64 = -32600;

/// Size of the in-process pipes between the relay and rmcp.
const PIPE_BYTES: usize = 64 * 1024;

/// The tasks around a [`stdio_transport`]: the reader relaying input lines and the writer of output lines.
#[derive(Debug)]
pub struct StdioRelay {
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

impl StdioRelay {
    /// Wait (at most `grace`) until the output holds every line written so far, once the rmcp service has ended
    /// (it closes its side, which ends the writer). The reader task is left to end with the process: a pending
    /// stdin read cannot be cancelled.
    pub async fn finish(self, grace: Duration) {
        if tokio::time::timeout(grace, self.writer).await.is_err() {
            tracing::warn!("the last answers could not be written to stdout in time");
        }
        self.reader.abort();
    }
}

/// The server transport over this process's stdin and stdout, with the relay described in the module docs.
pub fn stdio_transport() -> (AsyncRwTransport<RoleServer, DuplexStream, DuplexStream>, StdioRelay) {
    relay_transport(tokio::io::stdin(), tokio::io::stdout())
}

/// [`stdio_transport`] over any input and output (tests use in-memory pipes).
pub fn relay_transport<R, W>(
    input: R,
    output: W,
) -> (AsyncRwTransport<RoleServer, DuplexStream, DuplexStream>, StdioRelay)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_in) = tokio::io::duplex(PIPE_BYTES);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(PIPE_BYTES);
    let (lines, queue) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(write_lines(queue, output));
    let forward = lines.clone();
    // rmcp's output, line by line, into the one writer.
    let outbound = tokio::spawn(async move {
        let mut from_rmcp = BufReader::new(from_rmcp);
        let mut line = Vec::new();
        loop {
            line.clear();
            match from_rmcp.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if forward.send(with_null_id(std::mem::take(&mut line))).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let reader = tokio::spawn(async move {
        relay_input(input, to_rmcp, lines).await;
        // rmcp's side is closed (end of input reached it); its last answers are still to be forwarded.
        let _ = outbound.await;
    });
    (
        AsyncRwTransport::new_server(rmcp_in, rmcp_out),
        StdioRelay { reader, writer },
    )
}

/// Write each queued line to `output` and flush, until every sender is gone.
async fn write_lines<W: AsyncWrite + Unpin>(mut queue: mpsc::UnboundedReceiver<Vec<u8>>, mut output: W) {
    while let Some(line) = queue.recv().await {
        let written = async {
            output.write_all(&line).await?;
            if !line.ends_with(b"\n") {
                output.write_all(b"\n").await?;
            }
            output.flush().await
        };
        if let Err(e) = written.await {
            tracing::error!(error = %e, "cannot write to stdout; the client is gone");
            return;
        }
    }
}

/// Read `input` line by line: a JSON text goes to rmcp unchanged, anything else is answered on `answers`.
async fn relay_input<R: AsyncRead + Unpin>(
    input: R,
    mut to_rmcp: DuplexStream,
    answers: mpsc::UnboundedSender<Vec<u8>>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_bounded_line(&mut input, &mut line).await {
            Ok(Line::Eof) => break,
            Ok(Line::TooLong) => {
                tracing::warn!(max = MAX_LINE_BYTES, "a JSON-RPC line over the limit was dropped");
                let msg = format!("Invalid request: a message is at most {MAX_LINE_BYTES} bytes");
                if answers.send(error_line(INVALID_REQUEST, &msg)).is_err() {
                    break;
                }
            }
            Ok(Line::Whole) => match classify(&line) {
                Verdict::Blank => {}
                Verdict::NotJsonRpc(id) => {
                    tracing::debug!("answering a JSON text that is not a JSON-RPC message with invalid request");
                    let msg = "Invalid request: not a JSON-RPC 2.0 request, notification or response";
                    if answers.send(error_line_with_id(INVALID_REQUEST, msg, id)).is_err() {
                        break;
                    }
                }
                Verdict::Json => {
                    if !line.ends_with(b"\n") {
                        line.push(b'\n');
                    }
                    if to_rmcp.write_all(&line).await.is_err() {
                        break;
                    }
                }
                Verdict::NotJson(why) => {
                    tracing::debug!(error = %why, "answering an unparsable line with a parse error");
                    if answers
                        .send(error_line(PARSE_ERROR, &format!("Parse error: {why}")))
                        .is_err()
                    {
                        break;
                    }
                }
            },
            Err(e) => {
                tracing::error!(error = %e, "cannot read stdin");
                break;
            }
        }
    }
    // Dropping `to_rmcp` is rmcp's end of input.
}

/// What one line is.
enum Verdict {
    /// Empty or whitespace only: ignored, as rmcp does.
    Blank,
    /// A JSON-RPC 2.0 message as far as its envelope goes (rmcp reads the rest).
    Json,
    /// A JSON text that is not a JSON-RPC 2.0 message: its id when one can be read (a string or a number).
    NotJsonRpc(serde_json::Value),
    /// Not a JSON text: the parser's message.
    NotJson(String),
}

/// Classify one input line (its `\r\n` or `\n` ending and a UTF-8 byte order mark are ignored).
fn classify(line: &[u8]) -> Verdict {
    let text = line.strip_suffix(b"\n").unwrap_or(line);
    let text = text.strip_suffix(b"\r").unwrap_or(text);
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
    if text.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Blank;
    }
    // JSON text is UTF-8 (RFC 8259 section 8.1); the parser does not check strings it skips.
    let text = match std::str::from_utf8(text) {
        Ok(text) => text,
        Err(e) => return Verdict::NotJson(format!("not UTF-8: {e}")),
    };
    if !text.trim_start().starts_with('{') {
        // Not an object (an array is a batch, which MCP does not use): invalid unless it is not JSON at all.
        return match serde_json::from_str::<serde::de::IgnoredAny>(text) {
            Ok(_) => Verdict::NotJsonRpc(serde_json::Value::Null),
            Err(e) => Verdict::NotJson(e.to_string()),
        };
    }
    match serde_json::from_str::<Envelope>(text) {
        Ok(env) => {
            let id_ok = matches!(
                env.id,
                Some(serde_json::Value::String(_) | serde_json::Value::Number(_) | serde_json::Value::Null)
            );
            let request = env.method.is_some();
            let response = (env.result.is_some() || env.error.is_some()) && id_ok;
            if env.jsonrpc.as_deref() == Some("2.0") && (request || response) && (env.id.is_none() || id_ok) {
                Verdict::Json
            } else {
                Verdict::NotJsonRpc(match env.id {
                    Some(id @ (serde_json::Value::String(_) | serde_json::Value::Number(_))) => id,
                    _ => serde_json::Value::Null,
                })
            }
        }
        // Valid JSON whose members have the wrong types (`"method": 5`, a duplicate member): invalid request.
        Err(e) if e.classify() == serde_json::error::Category::Data => Verdict::NotJsonRpc(serde_json::Value::Null),
        Err(e) => Verdict::NotJson(e.to_string()),
    }
}

/// The members of a JSON-RPC 2.0 message the relay checks; the rest (`params`, the values of `result` and
/// `error`) is skipped unread.
#[derive(serde::Deserialize)]
struct Envelope {
    jsonrpc: Option<String>,
    method: Option<String>,
    #[serde(default, deserialize_with = "present")]
    id: Option<serde_json::Value>,
    result: Option<serde::de::IgnoredAny>,
    error: Option<serde::de::IgnoredAny>,
}

/// A member that is present, `null` included (`Some(Value::Null)`), unlike serde's default for `Option`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde::Deserialize::deserialize(d).map(Some)
}

/// `line` (one of rmcp's output lines) with `"id": null` added when it is an error response without an `id`
/// member (JSON-RPC 2.0 section 5: the id is `null` when it could not be read); other lines unchanged.
fn with_null_id(line: Vec<u8>) -> Vec<u8> {
    let has_id = line.windows(4).any(|w| w == b"\"id\"");
    if has_id {
        return line;
    }
    match serde_json::from_slice::<serde_json::Value>(&line) {
        Ok(serde_json::Value::Object(mut m)) if m.contains_key("error") && !m.contains_key("id") => {
            m.insert("id".to_owned(), serde_json::Value::Null);
            let mut fixed = serde_json::Value::Object(m).to_string().into_bytes();
            fixed.push(b'\n');
            fixed
        }
        _ => line,
    }
}

/// A JSON-RPC 2.0 error response with a `null` id (nothing of the request could be read).
fn error_line(code: i64, message: &str) -> Vec<u8> {
    error_line_with_id(code, message, serde_json::Value::Null)
}

/// A JSON-RPC 2.0 error response answering `id` (`null` when it could not be read).
fn error_line_with_id(code: i64, message: &str, id: serde_json::Value) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string();
    line.push('\n');
    line.into_bytes()
}

/// Outcome of one bounded line read.
enum Line {
    /// A line (with its `\n`, or the last bytes before the end of input) is in the buffer.
    Whole,
    /// The line was longer than [`MAX_LINE_BYTES`]; it was read to its end and dropped.
    TooLong,
    /// The end of input, nothing read.
    Eof,
}

/// Read one `\n`-terminated line into `buf` without holding more than [`MAX_LINE_BYTES`] of it.
async fn read_bounded_line<R: AsyncRead + Unpin>(input: &mut BufReader<R>, buf: &mut Vec<u8>) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if buf.is_empty() {
                Line::Eof
            } else {
                Line::Whole
            });
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |i| i + 1);
        if !too_long {
            if buf.len() + take > MAX_LINE_BYTES {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(&available[..take]);
            }
        }
        input.consume(take);
        if newline.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Whole });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_classified_as_rmcp_would_read_them() {
        assert!(matches!(classify(b"\n"), Verdict::Blank));
        assert!(matches!(classify(b"  \r\n"), Verdict::Blank));
        for ok in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\r\n"[..],
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\",\"params\":{}}\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}",
            b"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":1,\"message\":\"m\"}}",
        ] {
            assert!(matches!(classify(ok), Verdict::Json), "{ok:?}");
        }
        let null = serde_json::Value::Null;
        for (invalid, id) in [
            (&b"{\"jsonrpc\":\"2.0\"}\n"[..], null.clone()),
            (b"{}", null.clone()),
            (b"\xEF\xBB\xBF[1]\n", null.clone()),
            (b"42", null.clone()),
            (b"{\"jsonrpc\":\"2.0\",\"id\":7}", serde_json::json!(7)),
            (
                b"{\"jsonrpc\":\"1.0\",\"id\":\"x\",\"method\":\"m\"}",
                serde_json::json!("x"),
            ),
            (b"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"m\"}", null.clone()),
            (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", null.clone()),
        ] {
            match classify(invalid) {
                Verdict::NotJsonRpc(got) => assert_eq!(got, id, "{invalid:?}"),
                _ => panic!("{invalid:?} is not a JSON-RPC message"),
            }
        }
        for bad in [&b"{\n"[..], b"not json\n", b"{} {}\n", b"\"\xff\"\n", b"{]\n"] {
            assert!(matches!(classify(bad), Verdict::NotJson(_)), "{bad:?}");
        }
    }

    #[test]
    fn the_error_line_has_a_null_id() {
        let v: serde_json::Value = serde_json::from_slice(&error_line(PARSE_ERROR, "Parse error: x")).expect("json");
        assert_eq!(v["jsonrpc"], "2.0");
        assert!(
            v.as_object()
                .is_some_and(|o| o.get("id") == Some(&serde_json::Value::Null))
        );
        assert_eq!(v["error"]["code"], PARSE_ERROR);
    }

    #[test]
    fn an_error_response_without_an_id_gets_a_null_one() {
        let fixed = with_null_id(b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"m\"}}\n".to_vec());
        let v: serde_json::Value = serde_json::from_slice(&fixed).expect("json");
        assert_eq!(v.get("id"), Some(&serde_json::Value::Null), "{v}");
        assert!(fixed.ends_with(b"}\n"));
        for kept in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n"[..],
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n",
        ] {
            assert_eq!(with_null_id(kept.to_vec()), kept);
        }
    }

    #[tokio::test]
    async fn an_over_long_line_is_dropped_and_the_next_one_read() {
        let mut input = Vec::with_capacity(MAX_LINE_BYTES + 16);
        input.resize(MAX_LINE_BYTES + 1, b'x');
        input.extend_from_slice(b"\n[2]\n");
        let mut reader = BufReader::new(&input[..]);
        let mut buf = Vec::new();
        assert!(matches!(
            read_bounded_line(&mut reader, &mut buf).await,
            Ok(Line::TooLong)
        ));
        assert!(buf.len() <= MAX_LINE_BYTES);
        buf.clear();
        assert!(matches!(
            read_bounded_line(&mut reader, &mut buf).await,
            Ok(Line::Whole)
        ));
        assert_eq!(buf, b"[2]\n");
        buf.clear();
        assert!(matches!(read_bounded_line(&mut reader, &mut buf).await, Ok(Line::Eof)));
    }
}
