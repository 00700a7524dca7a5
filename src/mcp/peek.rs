//! What a JSON-RPC message asks for, read from its first bytes: the top-level `method` and, for
//! `tools/call`, the `name` in `params`. The Python and TypeScript SDKs write `method` and
//! `params.name` before `params.arguments`, so a few hundred bytes tell which tool a message
//! calls, however large its arguments. The Rust SDK (rmcp) writes the members of `params` in
//! alphabetical order, `arguments` before `name`: a call whose arguments hold an `audio_base64`
//! string before its name is seen is presumed to be `transcribe` (the one tool with such an
//! argument), and the gate confirms it from the whole message once it has admitted it as one
//! (with its place taken). The gate reads no further before it has admitted the call.
//!
//! This is a byte scanner, not a parser: it decodes only object keys and the two strings it
//! looks for (escapes included, at most [`MAX_DECODED`] bytes each) and steps over every other
//! value (strings escape-aware, arrays and objects by depth) without building anything. It never
//! decides alone what a message is: small messages are checked again by a full (borrowed) parse
//! once read, and a large `transcribe` by the gate's shape check.

/// Keys, methods and tool names longer than this are not decoded (no method or tool is).
const MAX_DECODED: usize = 256;

/// What the first bytes of a message name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Head {
    /// The top-level `method`, when it is a string.
    pub method: Option<String>,
    /// `params.name`, when it is a string.
    pub name: Option<String>,
    /// A `tools/call` whose `params.arguments` came before its name and hold an `audio_base64`
    /// string: presumed to be `transcribe`.
    pub audio_first: bool,
}

impl Head {
    /// The tool a `tools/call` message calls (or is presumed to call).
    pub fn tool(&self) -> Option<&str> {
        match self.method.as_deref() {
            Some("tools/call") if self.name.is_none() && self.audio_first => Some("transcribe"),
            Some("tools/call") => self.name.as_deref(),
            _ => None,
        }
    }

    fn decided(&self) -> bool {
        match self.method.as_deref() {
            Some("tools/call") => self.name.is_some() || self.audio_first,
            Some(_) => true,
            None => false,
        }
    }
}

/// The scanner's answer for a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scan {
    /// The prefix ends before the method (and tool) are known: read more.
    NeedMore,
    /// Known. A message that is not a JSON object names nothing.
    Done(Head),
}

/// Scans `prefix`, the first bytes of a message (all of it, or not).
pub fn scan(prefix: &[u8]) -> Scan {
    let mut cursor = Cursor {
        bytes: prefix,
        at: 0,
    };
    let mut head = Head::default();
    match cursor.message(&mut head) {
        Ok(()) => Scan::Done(head),
        Err(Stop::End) => Scan::NeedMore,
        Err(Stop::Bad) => Scan::Done(Head::default()),
    }
}

/// Why scanning stopped before an answer.
enum Stop {
    /// The prefix ended.
    End,
    /// Not JSON (or not an object).
    Bad,
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// The top-level object, up to the point where `head` is decided.
    fn message(&mut self, head: &mut Head) -> Result<(), Stop> {
        self.expect(b'{')?;
        if self.next_is(b'}')? {
            return Ok(());
        }
        loop {
            let key = self.key()?;
            match key.as_deref() {
                Some("method") if self.peek()? == b'"' => head.method = self.string(true)?,
                Some("params") if self.peek()? == b'{' => {
                    self.params(head)?;
                    if head.decided() {
                        return Ok(());
                    }
                }
                _ => self.skip_value()?,
            }
            if head.decided() {
                return Ok(());
            }
            if !self.more_members()? {
                return Ok(());
            }
        }
    }

    /// The `params` object: its `name`, until `head` is decided or the object ends.
    fn params(&mut self, head: &mut Head) -> Result<(), Stop> {
        self.expect(b'{')?;
        if self.next_is(b'}')? {
            return Ok(());
        }
        loop {
            let key = self.key()?;
            match key.as_deref() {
                Some("name") if self.peek()? == b'"' => head.name = self.string(true)?,
                Some("arguments")
                    if self.peek()? == b'{' && head.method.as_deref() == Some("tools/call") =>
                {
                    self.arguments(head)?;
                }
                _ => self.skip_value()?,
            }
            if head.decided() || !self.more_members()? {
                return Ok(());
            }
        }
    }

    /// `params.arguments` met before the tool's name: an `audio_base64` string member marks a
    /// presumed `transcribe` (decided there); otherwise the object is stepped over.
    fn arguments(&mut self, head: &mut Head) -> Result<(), Stop> {
        self.expect(b'{')?;
        if self.next_is(b'}')? {
            return Ok(());
        }
        loop {
            let key = self.key()?;
            if key.as_deref() == Some("audio_base64") && self.peek()? == b'"' {
                head.audio_first = true;
                return Ok(());
            }
            self.skip_value()?;
            if !self.more_members()? {
                return Ok(());
            }
        }
    }

    /// An object key and its colon; `None` when it is too long to be one we look for.
    fn key(&mut self) -> Result<Option<String>, Stop> {
        if self.peek()? != b'"' {
            return Err(Stop::Bad);
        }
        let key = self.string(true)?;
        self.expect(b':')?;
        Ok(key)
    }

    /// After a member: `true` on a comma, `false` at the object's end.
    fn more_members(&mut self) -> Result<bool, Stop> {
        match self.peek()? {
            b',' => {
                self.at += 1;
                Ok(true)
            }
            b'}' => {
                self.at += 1;
                Ok(false)
            }
            _ => Err(Stop::Bad),
        }
    }

    /// The next byte that is not white space (not consumed).
    fn peek(&mut self) -> Result<u8, Stop> {
        while let Some(&b) = self.bytes.get(self.at) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Ok(b);
            }
            self.at += 1;
        }
        Err(Stop::End)
    }

    fn expect(&mut self, byte: u8) -> Result<(), Stop> {
        if self.peek()? != byte {
            return Err(Stop::Bad);
        }
        self.at += 1;
        Ok(())
    }

    /// Consumes `byte` if it comes next.
    fn next_is(&mut self, byte: u8) -> Result<bool, Stop> {
        let is = self.peek()? == byte;
        if is {
            self.at += 1;
        }
        Ok(is)
    }

    /// A string (the cursor on its opening quote), decoded when `keep` and at most
    /// [`MAX_DECODED`] bytes long; `None` otherwise.
    fn string(&mut self, keep: bool) -> Result<Option<String>, Stop> {
        self.at += 1;
        let mut out: Option<Vec<u8>> = keep.then(Vec::new);
        loop {
            let &b = self.bytes.get(self.at).ok_or(Stop::End)?;
            self.at += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    let &e = self.bytes.get(self.at).ok_or(Stop::End)?;
                    self.at += 1;
                    let decoded = match e {
                        b'"' | b'\\' | b'/' => e as char,
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return Err(Stop::Bad),
                    };
                    if let Some(buf) = out.as_mut() {
                        let mut utf8 = [0; 4];
                        buf.extend_from_slice(decoded.encode_utf8(&mut utf8).as_bytes());
                    }
                }
                0..0x20 => return Err(Stop::Bad),
                _ => {
                    if let Some(buf) = out.as_mut() {
                        buf.push(b);
                    }
                }
            }
            if out.as_ref().is_some_and(|buf| buf.len() > MAX_DECODED) {
                out = None;
            }
        }
        Ok(out.map(|buf| String::from_utf8_lossy(&buf).into_owned()))
    }

    /// The character of a `\u` escape (the cursor after the `u`), a surrogate pair included.
    fn unicode_escape(&mut self) -> Result<char, Stop> {
        let high = self.hex4()?;
        if !(0xD800..0xDC00).contains(&high) {
            return Ok(char::from_u32(high).unwrap_or(char::REPLACEMENT_CHARACTER));
        }
        if self.bytes.get(self.at) == Some(&b'\\') && self.bytes.get(self.at + 1) == Some(&b'u') {
            self.at += 2;
            let low = self.hex4()?;
            if (0xDC00..0xE000).contains(&low) {
                let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                return Ok(char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER));
            }
        } else if self.at + 1 >= self.bytes.len() {
            return Err(Stop::End);
        }
        Ok(char::REPLACEMENT_CHARACTER)
    }

    fn hex4(&mut self) -> Result<u32, Stop> {
        let digits = self.bytes.get(self.at..self.at + 4).ok_or(Stop::End)?;
        self.at += 4;
        let text = std::str::from_utf8(digits).map_err(|_| Stop::Bad)?;
        u32::from_str_radix(text, 16).map_err(|_| Stop::Bad)
    }

    /// Steps over one value of any kind, keeping nothing.
    fn skip_value(&mut self) -> Result<(), Stop> {
        match self.peek()? {
            b'"' => self.string(false).map(drop),
            b'{' | b'[' => self.skip_nested(),
            _ => {
                let start = self.at;
                while let Some(&b) = self.bytes.get(self.at) {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        return if self.at > start {
                            Ok(())
                        } else {
                            Err(Stop::Bad)
                        };
                    }
                    self.at += 1;
                }
                Err(Stop::End)
            }
        }
    }

    /// Steps over an array or object by counting brackets outside strings (their contents are
    /// checked by the full parse that follows, never here).
    fn skip_nested(&mut self) -> Result<(), Stop> {
        let mut depth = 0usize;
        loop {
            let &b = self.bytes.get(self.at).ok_or(Stop::End)?;
            match b {
                b'"' => {
                    self.string(false)?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.at += 1;
                        return Ok(());
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(method: Option<&str>, name: Option<&str>) -> Scan {
        Scan::Done(Head {
            method: method.map(str::to_owned),
            name: name.map(str::to_owned),
            audio_first: false,
        })
    }

    #[test]
    fn the_method_and_tool_come_from_the_first_bytes() {
        let call = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"transcribe","arguments":{"audio_base64":"AAAA"#;
        assert_eq!(scan(call), done(Some("tools/call"), Some("transcribe")));
        // The TypeScript SDK's order: method, params, then jsonrpc and id.
        let ts =
            br#"{ "method" : "tools/call" , "params" : { "name" : "speak", "arguments": {"text": "#;
        assert_eq!(scan(ts), done(Some("tools/call"), Some("speak")));
        let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"#;
        assert_eq!(scan(list), done(Some("tools/list"), None));
        // Every prefix of a call is either not yet decided or decided right.
        let whole = br#"{"id":[1,{"x":"}]"}],"_meta":{"a":[[]]},"method":"tools/call","params":{"_meta":{"k":"v\"}"},"name":"list_voices","arguments":{}}}"#;
        for end in 0..whole.len() {
            match scan(&whole[..end]) {
                Scan::NeedMore => {}
                decided => assert_eq!(decided, done(Some("tools/call"), Some("list_voices"))),
            }
        }
        assert_eq!(scan(whole), done(Some("tools/call"), Some("list_voices")));
    }

    #[test]
    fn escapes_are_decoded_and_other_values_stepped_over() {
        let escaped = br#"{"m\u0065thod":"tools\/call","params":{"arguments":{"a":[1,2,{"b":null}],"c":"\\\""},"n\u0061me":"spe\u0061k"}}"#;
        assert_eq!(scan(escaped), done(Some("tools/call"), Some("speak")));
        let surrogate = br#"{"method":"tools/call","params":{"name":"\ud83d\ude00"}}"#;
        assert_eq!(scan(surrogate), done(Some("tools/call"), Some("\u{1F600}")));
        // Arguments before the name: read past them (the prefix must hold them).
        let late = br#"{"method":"tools/call","params":{"arguments":{"x":"#;
        assert_eq!(scan(late), Scan::NeedMore);
        let small =
            br#"{"method":"tools/call","params":{"arguments":{"x":[1],"y":{}},"name":"speak"}}"#;
        assert_eq!(scan(small), done(Some("tools/call"), Some("speak")));
        // The object ends without a name: decided, no tool.
        let nameless = br#"{"method":"tools/call","params":{}}"#;
        assert_eq!(scan(nameless), done(Some("tools/call"), None));
        assert_eq!(scan(br#"{"id":1}"#), done(None, None));
        assert_eq!(scan(br#"{"method":5,"id":1}"#), done(None, None));
    }

    #[test]
    fn audio_before_the_name_is_presumed_to_be_transcribe() {
        // rmcp's order: id, jsonrpc, method, then params' members alphabetically.
        let rmcp = br#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"arguments":{"audio_base64":"UklGR"#;
        let Scan::Done(head) = scan(rmcp) else {
            panic!("decided")
        };
        assert!(head.audio_first && head.name.is_none());
        assert_eq!(head.tool(), Some("transcribe"));
        // Not when audio_base64 is no string, nor outside tools/call.
        let odd = br#"{"method":"tools/call","params":{"arguments":{"audio_base64":[1"#;
        assert_eq!(scan(odd), Scan::NeedMore);
        let other = br#"{"method":"x","params":{"arguments":{"audio_base64":"AAAA"#;
        assert_eq!(scan(other), done(Some("x"), None));
        let Scan::Done(head) = scan(br#"{"params":{"arguments":{"audio_base64":"A"}},"id":1}"#)
        else {
            panic!("decided")
        };
        assert_eq!(head.tool(), None);
    }

    #[test]
    fn what_is_not_an_object_names_nothing() {
        for bad in [
            &b"[]"[..],
            b"not json",
            b"\"method\"",
            br#"{"method" "tools/call"}"#,
            br#"{"method":"tools/call","params":{"name":"a\qb"}}"#,
            b"{\"method\":\"a\x01\"}",
        ] {
            assert_eq!(scan(bad), Scan::Done(Head::default()), "{bad:?}");
        }
        for short in [
            &b""[..],
            b"  ",
            b"{",
            br#"{"method":"tools/ca"#,
            br#"{"method":"\u00"#,
        ] {
            assert_eq!(scan(short), Scan::NeedMore, "{short:?}");
        }
    }

    #[test]
    fn long_strings_are_not_decoded() {
        let long = format!(
            r#"{{"method":"tools/call","params":{{"name":"{}"}}}}"#,
            "x".repeat(MAX_DECODED + 1)
        );
        // Not decided by the name (too long to be a tool): the object ends with none.
        assert_eq!(scan(long.as_bytes()), done(Some("tools/call"), None));
    }
}
