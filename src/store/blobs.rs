//! The blob store for generated audio (DECISIONS "Storage"): one small interface, with
//! PostgreSQL as the default backend. An S3-compatible backend (`object_store`) is the
//! multi-node option; it is not built yet. Downloads read blobs in ranges ([`BlobStore::head`],
//! [`BlobStore::read`]) so that a large file is streamed, never held whole in memory.

use std::future::Future;
use std::pin::Pin;

use sqlx::PgPool;

pub struct Blob {
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// What a download needs to know before reading: the type and the length in bytes.
pub struct BlobHead {
    pub content_type: String,
    pub len: u64,
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where audio bytes live. Keys are opaque strings; `put` overwrites (a retried generation
/// writes the same bytes under the same key).
pub trait BlobStore: Send + Sync {
    fn put<'a>(&'a self, key: &'a str, blob: &'a Blob) -> BoxFuture<'a, anyhow::Result<()>>;
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<Option<Blob>>>;
    fn head<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<Option<BlobHead>>>;
    /// Up to `len` bytes from `offset` (fewer at the end of the blob).
    fn read<'a>(
        &'a self,
        key: &'a str,
        offset: u64,
        len: u64,
    ) -> BoxFuture<'a, anyhow::Result<Vec<u8>>>;
}

/// Audio bytes in the `blobs` table.
#[derive(Clone)]
pub struct PgBlobStore {
    pool: PgPool,
}

impl PgBlobStore {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

impl BlobStore for PgBlobStore {
    fn put<'a>(&'a self, key: &'a str, blob: &'a Blob) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            sqlx::query!(
                "INSERT INTO blobs (key, content_type, bytes) VALUES ($1, $2, $3)
                 ON CONFLICT (key) DO UPDATE SET content_type = $2, bytes = $3",
                key,
                blob.content_type,
                blob.bytes
            )
            .execute(&self.pool)
            .await?;
            Ok(())
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<Option<Blob>>> {
        Box::pin(async move {
            let row = sqlx::query_as!(
                Blob,
                "SELECT content_type, bytes FROM blobs WHERE key = $1",
                key
            )
            .fetch_optional(&self.pool)
            .await?;
            Ok(row)
        })
    }

    fn head<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<Option<BlobHead>>> {
        Box::pin(async move {
            let row = sqlx::query!(
                r#"SELECT content_type, octet_length(bytes)::BIGINT AS "len!" FROM blobs WHERE key = $1"#,
                key
            )
            .fetch_optional(&self.pool)
            .await?;
            Ok(row.map(|r| BlobHead {
                content_type: r.content_type,
                len: r.len as u64,
            }))
        })
    }

    fn read<'a>(
        &'a self,
        key: &'a str,
        offset: u64,
        len: u64,
    ) -> BoxFuture<'a, anyhow::Result<Vec<u8>>> {
        Box::pin(async move {
            let bytes = sqlx::query_scalar!(
                r#"SELECT substring(bytes FROM $2 FOR $3) AS "bytes!" FROM blobs WHERE key = $1"#,
                key,
                i32::try_from(offset + 1)?,
                i32::try_from(len)?
            )
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| anyhow::anyhow!("blob {key} vanished"))?;
            Ok(bytes)
        })
    }
}
