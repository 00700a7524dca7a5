//! The blob store for generated audio (DECISIONS "Storage"): one small interface, with
//! PostgreSQL as the default backend, and an S3-compatible one (`object_store`, setting
//! `blob_store`) for the multi-node layout; [`RoutedBlobStore`] picks by each key's mark. Downloads read blobs in ranges ([`BlobStore::head`],
//! [`BlobStore::read`], [`stream`]) so that a large file is streamed, never held whole in memory.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

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
    /// The key under which new audio named `name` is written (which may mark its store).
    fn key_for(&self, name: &str) -> String {
        name.to_owned()
    }
    fn put<'a>(&'a self, key: &'a str, blob: &'a Blob) -> BoxFuture<'a, anyhow::Result<()>>;
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<Option<Blob>>>;
    fn head<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<Option<BlobHead>>>;
    /// Removes the blob (nothing when it is not there): audio of a generation that was
    /// cancelled after its bytes were stored, which nobody can download.
    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<()>>;
    /// Up to `len` bytes from `offset` (fewer at the end of the blob).
    fn read<'a>(
        &'a self,
        key: &'a str,
        offset: u64,
        len: u64,
    ) -> BoxFuture<'a, anyhow::Result<Vec<u8>>>;
    /// A URL that lets its holder `GET` (or `HEAD`) the blob directly for `expires_in`, without
    /// credentials; `None` where the store has no such URLs (PostgreSQL). Nothing is contacted.
    fn presigned<'a>(
        &'a self,
        _key: &'a str,
        _head: bool,
        _expires_in: std::time::Duration,
    ) -> BoxFuture<'a, anyhow::Result<Option<String>>> {
        Box::pin(async { Ok(None) })
    }
}

/// Bytes read from the store per chunk of [`stream`]: large enough that a 35 MB file is 35
/// queries, small enough that a download holds little memory.
pub const STREAM_CHUNK: u64 = 1024 * 1024;

/// Bytes `start..end` of the blob, read from the store [`STREAM_CHUNK`] bytes at a time as
/// the consumer takes them: a large file is never held whole in memory. A blob that ends early
/// (or vanishes) ends the stream with an error.
pub fn stream(
    blobs: Arc<dyn BlobStore>,
    key: String,
    start: u64,
    end: u64,
) -> impl futures_util::Stream<Item = anyhow::Result<bytes::Bytes>> + Send + 'static {
    futures_util::stream::try_unfold(start, move |offset| {
        let (blobs, key) = (blobs.clone(), key.clone());
        async move {
            if offset >= end {
                return Ok(None);
            }
            let bytes = blobs
                .read(&key, offset, STREAM_CHUNK.min(end - offset))
                .await?;
            if bytes.is_empty() {
                anyhow::bail!("blob {key} ended early");
            }
            let next = offset + bytes.len() as u64;
            Ok(Some((bytes::Bytes::from(bytes), next)))
        }
    })
}

/// Audio bytes in the `blobs` table.
#[derive(Clone)]
pub struct PgBlobStore {
    pool: PgPool,
    /// Where reads ([`BlobStore::head`], [`BlobStore::read`]) run: a small pool of their own in
    /// `voiced serve` (`download_connections`), so that many downloads wait for each other,
    /// never for, or ahead of, the writes on the main pool.
    reads: PgPool,
}

impl PgBlobStore {
    pub fn new(pool: PgPool) -> Self {
        Self {
            reads: pool.clone(),
            pool,
        }
    }

    /// Reads go through `reads` instead of the main pool.
    pub fn with_read_pool(mut self, reads: PgPool) -> Self {
        self.reads = reads;
        self
    }
}

impl BlobStore for PgBlobStore {
    fn put<'a>(&'a self, key: &'a str, blob: &'a Blob) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            // Committed without waiting for the WAL flush (`synchronous_commit` off for this
            // statement's transaction): the only writer, the worker, completes the generation
            // next in a durable commit, which flushes this one with it (the WAL is flushed in
            // order). A database crash before that loses audio no row points to yet; the job
            // runs again. One flush fewer per generation.
            sqlx::query!(
                "INSERT INTO blobs (key, content_type, bytes)
                 SELECT $1, $2, $3 FROM set_config('synchronous_commit', 'off', true)
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

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            sqlx::query!("DELETE FROM blobs WHERE key = $1", key)
                .execute(&self.pool)
                .await?;
            Ok(())
        })
    }

    fn head<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<Option<BlobHead>>> {
        Box::pin(async move {
            let row = sqlx::query!(
                r#"SELECT content_type, octet_length(bytes)::BIGINT AS "len!" FROM blobs WHERE key = $1"#,
                key
            )
            .fetch_optional(&self.reads)
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
            .fetch_optional(&self.reads)
            .await?
            .ok_or_else(|| anyhow::anyhow!("blob {key} vanished"))?;
            Ok(bytes)
        })
    }
}

/// Keys of blobs held in S3 start with this; a key without it is in PostgreSQL. So each
/// generation's `audio_key` says which store holds its audio, and a deployment can move to S3
/// (or back) without losing the audio written before.
pub const S3_SCHEME: &str = "s3:";

/// Audio in an S3-compatible bucket (`blob_store = "s3://bucket/prefix"`; credentials, region
/// and endpoint from the standard `AWS_*` variables, e.g. `AWS_ENDPOINT_URL` and
/// `AWS_ALLOW_HTTP=true` for a local server). Keys are stored under the prefix.
pub struct S3BlobStore {
    store: object_store::aws::AmazonS3,
    prefix: String,
}

impl S3BlobStore {
    /// `s3://bucket` or `s3://bucket/prefix`; nothing is contacted here.
    pub fn from_url(url: &str) -> anyhow::Result<Self> {
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| anyhow::anyhow!("expected s3://bucket/prefix"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        anyhow::ensure!(!bucket.is_empty(), "expected s3://bucket/prefix");
        let store = object_store::aws::AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()?;
        Ok(Self {
            store,
            prefix: prefix.trim_matches('/').to_owned(),
        })
    }

    fn path(&self, key: &str) -> object_store::path::Path {
        let key = key.strip_prefix(S3_SCHEME).unwrap_or(key);
        if self.prefix.is_empty() {
            object_store::path::Path::from(key)
        } else {
            object_store::path::Path::from(format!("{}/{key}", self.prefix))
        }
    }

    async fn get_opts(
        &self,
        key: &str,
        options: object_store::GetOptions,
    ) -> anyhow::Result<Option<object_store::GetResult>> {
        use object_store::ObjectStore as _;
        match self.store.get_opts(&self.path(key), options).await {
            Ok(result) => Ok(Some(result)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => Err(err.into()),
        }
    }
}

fn content_type_of(result: &object_store::GetResult) -> String {
    result
        .attributes
        .get(&object_store::Attribute::ContentType)
        .map_or_else(|| "application/octet-stream".to_owned(), |v| v.to_string())
}

impl BlobStore for S3BlobStore {
    fn put<'a>(&'a self, key: &'a str, blob: &'a Blob) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            use object_store::ObjectStore as _;
            let options = object_store::PutOptions {
                attributes: object_store::Attributes::from_iter([(
                    object_store::Attribute::ContentType,
                    object_store::AttributeValue::from(blob.content_type.clone()),
                )]),
                ..Default::default()
            };
            self.store
                .put_opts(&self.path(key), blob.bytes.clone().into(), options)
                .await?;
            Ok(())
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<Option<Blob>>> {
        Box::pin(async move {
            let Some(result) = self.get_opts(key, Default::default()).await? else {
                return Ok(None);
            };
            let content_type = content_type_of(&result);
            let bytes = result.bytes().await?.to_vec();
            Ok(Some(Blob {
                content_type,
                bytes,
            }))
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move {
            use object_store::ObjectStore as _;
            match self.store.delete(&self.path(key)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(err) => Err(err.into()),
            }
        })
    }

    fn head<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<Option<BlobHead>>> {
        Box::pin(async move {
            let options = object_store::GetOptions {
                head: true,
                ..Default::default()
            };
            Ok(self.get_opts(key, options).await?.map(|result| BlobHead {
                content_type: content_type_of(&result),
                len: result.meta.size,
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
            if len == 0 {
                return Ok(Vec::new());
            }
            // A ranged GET; S3 clamps the end to the object's size.
            let options = object_store::GetOptions {
                range: Some(object_store::GetRange::Bounded(offset..offset + len)),
                ..Default::default()
            };
            match self.get_opts(key, options).await? {
                Some(result) => Ok(result.bytes().await?.to_vec()),
                None => anyhow::bail!("blob {key} is gone"),
            }
        })
    }

    fn presigned<'a>(
        &'a self,
        key: &'a str,
        head: bool,
        expires_in: std::time::Duration,
    ) -> BoxFuture<'a, anyhow::Result<Option<String>>> {
        Box::pin(async move {
            use object_store::signer::Signer as _;
            // SigV4 signs the method: a HEAD needs a URL of its own.
            let method = if head {
                axum::http::Method::HEAD
            } else {
                axum::http::Method::GET
            };
            let url = self
                .store
                .signed_url(method, &self.path(key), expires_in)
                .await?;
            Ok(Some(url.to_string()))
        })
    }
}

/// The blob store a process uses: new audio goes to S3 when `blob_store` is set (its key marked
/// [`S3_SCHEME`]), else to PostgreSQL; reads follow each key's mark.
pub struct RoutedBlobStore {
    pg: PgBlobStore,
    s3: Option<S3BlobStore>,
}

impl RoutedBlobStore {
    pub fn new(pg: PgBlobStore, s3: Option<S3BlobStore>) -> Self {
        Self { pg, s3 }
    }

    fn backend(&self, key: &str) -> anyhow::Result<&dyn BlobStore> {
        if key.starts_with(S3_SCHEME) {
            match &self.s3 {
                Some(s3) => Ok(s3),
                None => anyhow::bail!(
                    "audio {key} is in S3 but this process has no blob_store (VOICED_BLOB_STORE)"
                ),
            }
        } else {
            Ok(&self.pg)
        }
    }
}

impl BlobStore for RoutedBlobStore {
    fn key_for(&self, name: &str) -> String {
        match self.s3 {
            Some(_) => format!("{S3_SCHEME}{name}"),
            None => name.to_owned(),
        }
    }

    fn put<'a>(&'a self, key: &'a str, blob: &'a Blob) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move { self.backend(key)?.put(key, blob).await })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<Option<Blob>>> {
        Box::pin(async move { self.backend(key)?.get(key).await })
    }

    fn head<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<Option<BlobHead>>> {
        Box::pin(async move { self.backend(key)?.head(key).await })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move { self.backend(key)?.delete(key).await })
    }

    fn read<'a>(
        &'a self,
        key: &'a str,
        offset: u64,
        len: u64,
    ) -> BoxFuture<'a, anyhow::Result<Vec<u8>>> {
        Box::pin(async move { self.backend(key)?.read(key, offset, len).await })
    }

    fn presigned<'a>(
        &'a self,
        key: &'a str,
        head: bool,
        expires_in: std::time::Duration,
    ) -> BoxFuture<'a, anyhow::Result<Option<String>>> {
        Box::pin(async move { self.backend(key)?.presigned(key, head, expires_in).await })
    }
}
