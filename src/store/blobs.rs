//! The blob store for generated audio (DECISIONS "Storage"): one small interface, with
//! PostgreSQL as the default backend. An S3-compatible backend (`object_store`) is the
//! multi-node option; it is not built yet.

use std::future::Future;
use std::pin::Pin;

use sqlx::PgPool;

pub struct Blob {
    pub content_type: String,
    pub bytes: Vec<u8>,
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where audio bytes live. Keys are opaque strings; `put` overwrites (a retried generation
/// writes the same bytes under the same key).
pub trait BlobStore: Send + Sync {
    fn put<'a>(&'a self, key: &'a str, blob: &'a Blob) -> BoxFuture<'a, anyhow::Result<()>>;
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<Option<Blob>>>;
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
}
