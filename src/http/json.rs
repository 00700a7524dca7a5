//! JSON request bodies as a plain object, so that each field is validated by hand and an error
//! names the field at fault (axum's `Json` rejects with its own text and no field name).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, header};
use serde_json::{Map, Value};

use super::error::{ApiError, ErrorCode};

/// A request body that is a JSON object.
pub struct JsonObject(pub Map<String, Value>);

impl<S: Send + Sync> FromRequest<S> for JsonObject {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        require_json(request.headers())?;
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    too_large()
                } else {
                    unreadable()
                }
            })?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(JsonObject(map)),
            Ok(_) => Err(not_an_object()),
            Err(err) => Err(not_json(&err)),
        }
    }
}

pub fn too_large() -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        "The request body is larger than this endpoint accepts.",
    )
}

pub fn unreadable() -> ApiError {
    ApiError::new(
        ErrorCode::InvalidRequest,
        "The request body could not be read.",
    )
}

pub fn not_an_object() -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, "The body must be a JSON object.")
}

pub fn not_json(err: &serde_json::Error) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidRequest,
        format!(
            "The body is not valid JSON (line {}, column {}).",
            err.line(),
            err.column()
        ),
    )
}

/// 415 for a non-JSON content type, 400 for none; checked before the body is read.
pub fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|mime| {
            let mime = mime.trim().to_ascii_lowercase();
            mime == "application/json"
                || (mime.starts_with("application/") && mime.ends_with("+json"))
        });
    match is_json {
        Some(true) => {}
        Some(false) => {
            return Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                "Send the body as JSON with Content-Type: application/json.",
            ));
        }
        None => {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "The body must be JSON sent with Content-Type: application/json.",
            ));
        }
    }
    Ok(())
}

impl JsonObject {
    /// Refuses any member outside `allowed`, naming it.
    pub fn only(&self, allowed: &[&str]) -> Result<(), ApiError> {
        match self.0.keys().find(|k| !allowed.contains(&k.as_str())) {
            Some(unknown) => Err(ApiError::invalid(
                unknown.clone(),
                format!(
                    "Unknown field {unknown:?}; accepted fields: {}.",
                    allowed.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    /// A required string member.
    pub fn required_str(&self, name: &str) -> Result<&str, ApiError> {
        match self.0.get(name) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(ApiError::invalid(name, format!("{name} must be a string"))),
            None => Err(ApiError::invalid(name, format!("{name} is required"))),
        }
    }

    /// An optional member that is not null.
    pub fn optional(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    /// One member as a [`Field`] (a copy of it; for a DTO's member read on its own).
    pub fn field<T: serde::de::DeserializeOwned>(&self, name: &str) -> Field<T> {
        match self.0.get(name) {
            None => Field::Absent,
            Some(Value::Null) => Field::Null,
            Some(value) => {
                serde_json::from_value(value.clone()).map_or(Field::Invalid, Field::Valid)
            }
        }
    }

    /// The body as a JSON value (a copy; used only to fingerprint idempotent requests).
    pub fn value(&self) -> Value {
        Value::Object(self.0.clone())
    }
}

/// One member of a request DTO, decoded without failing the whole body: absent, `null`, a
/// value of the wanted type, or present with another type. The DTO's conversion into the
/// service's input checks the members in a fixed order with the messages callers have always
/// seen (`text must be a string`, `seed must be an integer from 0 to …`), whatever order the
/// client wrote them in; a decode error of the whole body could only name the first member
/// serde happened to visit.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Field<T> {
    #[default]
    Absent,
    Null,
    Valid(T),
    /// Present, not `null`, not a `T`.
    Invalid,
}

impl<'de, T: serde::de::DeserializeOwned> serde::Deserialize<'de> for Field<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if value.is_null() {
            return Ok(Field::Null);
        }
        Ok(serde_json::from_value(value).map_or(Field::Invalid, Field::Valid))
    }
}

impl<T> Field<T> {
    /// Present and not `null` (what an optional member means by "sent").
    pub fn sent(&self) -> bool {
        matches!(self, Field::Valid(_) | Field::Invalid)
    }

    /// An optional member: absent or `null` → `None`; another type → `invalid()`.
    pub fn optional<E>(self, invalid: impl FnOnce() -> E) -> Result<Option<T>, E> {
        match self {
            Field::Absent | Field::Null => Ok(None),
            Field::Valid(value) => Ok(Some(value)),
            Field::Invalid => Err(invalid()),
        }
    }
}

impl Field<String> {
    /// A required string member: `{name} is required` when absent, `{name} must be a string`
    /// otherwise (`null` included), as [`JsonObject::required_str`] words it.
    pub fn required(self, name: &str) -> Result<String, ApiError> {
        match self {
            Field::Valid(s) => Ok(s),
            Field::Absent => Err(ApiError::invalid(name, format!("{name} is required"))),
            Field::Null | Field::Invalid => {
                Err(ApiError::invalid(name, format!("{name} must be a string")))
            }
        }
    }

    /// An optional string member (absent or `null`: empty).
    pub fn optional_str(self, name: &str) -> Result<String, ApiError> {
        self.optional(|| ApiError::invalid(name, format!("{name} must be a string")))
            .map(Option::unwrap_or_default)
    }
}

/// The member names a DTO accepts, read from its `Deserialize` implementation (serde passes
/// them to `deserialize_struct`), so that the list in the unknown-member error is the DTO's own.
pub fn fields_of<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    struct Names(Option<&'static [&'static str]>);
    impl<'de> serde::Deserializer<'de> for &mut Names {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: serde::de::Visitor<'de>>(
            self,
            _: V,
        ) -> Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = Some(fields);
            Err(serde::de::Error::custom("names read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut names = Names(None);
    let _ = T::deserialize(&mut names);
    names.0.unwrap_or(&[])
}

impl JsonObject {
    /// The body as the DTO `T` (`#[serde(deny_unknown_fields)]`, members of type [`Field`]):
    /// a member `T` does not name is refused first, naming it and listing `T`'s members; then
    /// the body is decoded through `serde_path_to_error`, whose path names the member at fault
    /// should a member's own decoding ever fail.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, ApiError> {
        self.only(fields_of::<T>())?;
        serde_path_to_error::deserialize(&Value::Object(self.0.clone())).map_err(|err| {
            let field = err.path().to_string();
            ApiError::invalid(field.clone(), format!("{field} is not valid"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body {
        #[serde(default)]
        name: Field<String>,
        #[serde(default)]
        count: Field<u64>,
    }

    fn object(value: Value) -> JsonObject {
        JsonObject(value.as_object().unwrap().clone())
    }

    #[test]
    fn members_are_absent_null_valid_or_invalid() {
        let body: Body = object(json!({"name": null, "count": 3})).decode().unwrap();
        assert_eq!(body.name, Field::Null);
        assert_eq!(body.count, Field::Valid(3));
        let body: Body = object(json!({"name": 1, "count": -1})).decode().unwrap();
        assert_eq!(body.name, Field::Invalid);
        assert_eq!(body.count, Field::Invalid);
        let body: Body = object(json!({})).decode().unwrap();
        assert_eq!(body.name, Field::Absent);
        assert!(!body.count.sent());
    }

    #[test]
    fn required_and_optional_strings_keep_their_wording() {
        let missing = Field::<String>::Absent.required("text").unwrap_err();
        assert_eq!(missing.detail, "text is required");
        for wrong in [Field::Null, Field::Invalid] {
            let err = wrong.required("text").unwrap_err();
            assert_eq!(
                (err.param.as_deref(), err.detail.as_str()),
                (Some("text"), "text must be a string")
            );
        }
        assert_eq!(Field::<String>::Null.optional_str("language").unwrap(), "");
        assert!(Field::<String>::Invalid.optional_str("language").is_err());
    }

    #[test]
    fn the_accepted_members_are_the_dtos_own() {
        assert_eq!(fields_of::<Body>(), ["name", "count"]);
        let err = object(json!({"name": "a", "colour": "red"}))
            .decode::<Body>()
            .unwrap_err();
        assert_eq!(err.param.as_deref(), Some("colour"));
        assert_eq!(
            err.detail,
            "Unknown field \"colour\"; accepted fields: name, count."
        );
    }
}
