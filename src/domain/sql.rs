//! The domain's text-backed enums as PostgreSQL TEXT columns: rows decode them once (a
//! `query_as!` override such as `status AS "status: GenerationStatus"`), and an unknown value is
//! a decode error rather than a string compared further up.

use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgTypeInfo, PgValueRef, Postgres};
use sqlx::{Decode, Encode, Type};

use super::{EngineId, GenerationStatus, VoiceKind};

macro_rules! text_column {
    ($($ty:ty),*) => {$(
        impl Type<Postgres> for $ty {
            fn type_info() -> PgTypeInfo {
                <&str as Type<Postgres>>::type_info()
            }
            fn compatible(ty: &PgTypeInfo) -> bool {
                <&str as Type<Postgres>>::compatible(ty)
            }
        }

        impl<'r> Decode<'r, Postgres> for $ty {
            fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
                let text = <&str as Decode<Postgres>>::decode(value)?;
                Ok(text.parse::<$ty>()?)
            }
        }

        impl Encode<'_, Postgres> for $ty {
            fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
                <&str as Encode<Postgres>>::encode(self.as_str(), buf)
            }
        }
    )*};
}

text_column!(GenerationStatus, VoiceKind, EngineId);
