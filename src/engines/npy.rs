//! The few NumPy `.npy` files engines read: little-endian float32, C order, one or two
//! dimensions (embedding tables and projection weights exported with `numpy.save`).

use std::path::Path;

use super::EngineError;

/// A float32 matrix, row-major. A 1-D array is one row.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f32>,
}

impl Matrix {
    pub fn row(&self, i: usize) -> Option<&[f32]> {
        (i < self.rows).then(|| &self.data[i * self.cols..(i + 1) * self.cols])
    }
}

/// Reads `path`; anything but `<f4`, C order, rank 1 or 2 is refused with the reason.
pub fn read(path: &Path) -> Result<Matrix, EngineError> {
    let broken =
        |why: &str| EngineError::NotInstalled(format!("{} is not usable: {why}", path.display()));
    let bytes = std::fs::read(path)
        .map_err(|e| EngineError::NotInstalled(format!("{}: {e}", path.display())))?;
    parse(&bytes).map_err(|why| broken(&why))
}

fn parse(bytes: &[u8]) -> Result<Matrix, String> {
    let rest = bytes.strip_prefix(b"\x93NUMPY").ok_or("not a .npy file")?;
    let (major, rest) = rest.split_first().ok_or("truncated")?;
    let (_, rest) = rest.split_first().ok_or("truncated")?;
    let (len, rest) = match major {
        1 => {
            let (len, rest) = rest.split_at_checked(2).ok_or("truncated")?;
            (u16::from_le_bytes([len[0], len[1]]) as usize, rest)
        }
        2 | 3 => {
            let (len, rest) = rest.split_at_checked(4).ok_or("truncated")?;
            (
                u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize,
                rest,
            )
        }
        v => return Err(format!("format version {v} is unknown")),
    };
    let (header, data) = rest.split_at_checked(len).ok_or("truncated header")?;
    let header = std::str::from_utf8(header).map_err(|_| "header is not text")?;
    let value = |key: &str| -> Option<&str> {
        let at = header.find(&format!("'{key}':"))? + key.len() + 3;
        Some(header[at..].trim_start())
    };
    let descr = value("descr").ok_or("no descr")?;
    if !descr.starts_with("'<f4'") {
        return Err(format!(
            "element type {} (float32 little-endian expected)",
            descr.split(',').next().unwrap_or(descr)
        ));
    }
    if !value("fortran_order")
        .ok_or("no fortran_order")?
        .starts_with("False")
    {
        return Err("Fortran order".into());
    }
    let shape = value("shape").ok_or("no shape")?;
    let inner = shape
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or("bad shape")?;
    let dims: Vec<usize> = inner
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.parse().map_err(|_| format!("bad dimension {d:?}")))
        .collect::<Result<_, _>>()?;
    let (rows, cols) = match dims[..] {
        [n] => (1, n),
        [r, c] => (r, c),
        _ => return Err(format!("rank {} (1 or 2 expected)", dims.len())),
    };
    let count = rows.checked_mul(cols).ok_or("too large")?;
    if data.len() != count * 4 {
        return Err(format!("{} data bytes for {count} elements", data.len()));
    }
    let data = data
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    Ok(Matrix { rows, cols, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(header: &str, data: &[f32]) -> Vec<u8> {
        let mut h = header.to_owned();
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((h.len() as u16).to_le_bytes());
        out.extend(h.as_bytes());
        out.extend(data.iter().flat_map(|x| x.to_le_bytes()));
        out
    }

    #[test]
    fn matrices_and_vectors_are_read_and_other_files_refused() {
        let m = parse(&npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        ))
        .unwrap();
        assert_eq!((m.rows, m.cols), (2, 3));
        assert_eq!(m.row(1), Some(&[4.0, 5.0, 6.0][..]));
        assert_eq!(m.row(2), None);
        let v = parse(&npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
            &[1.0, 2.0],
        ))
        .unwrap();
        assert_eq!((v.rows, v.cols), (1, 2));
        assert!(
            parse(&npy(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }",
                &[1.0, 2.0]
            ))
            .unwrap_err()
            .contains("float32")
        );
        assert!(
            parse(&npy(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
                &[1.0, 2.0]
            ))
            .is_err()
        );
        assert!(parse(b"PK\x03\x04").is_err());
    }
}
