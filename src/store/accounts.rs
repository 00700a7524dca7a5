use sqlx::PgPool;

use crate::domain::{Feature, Plan};

fn feature_names(features: &[Feature]) -> Vec<String> {
    features.iter().map(|f| f.as_str().to_owned()).collect()
}

pub async fn insert(pool: &PgPool, id: &str, email: &str, plan: Plan) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO accounts (id, email, plan, features) VALUES ($1, $2, $3, $4)",
        id,
        email,
        plan.as_str(),
        &feature_names(&plan.default_features())
    )
    .execute(pool)
    .await?;
    Ok(())
}

/// Changes the plan and resets the feature set to the plan's; `false` when there is no account.
pub async fn set_plan(pool: &PgPool, id: &str, plan: Plan) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE accounts SET plan = $2, features = $3, updated_at = now() WHERE id = $1",
        id,
        plan.as_str(),
        &feature_names(&plan.default_features())
    )
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Narrows or widens the account's feature set; `false` when there is no account.
pub async fn set_features(pool: &PgPool, id: &str, features: &[Feature]) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE accounts SET features = $2, updated_at = now() WHERE id = $1",
        id,
        &feature_names(features)
    )
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

pub async fn exists(pool: &PgPool, id: &str) -> sqlx::Result<bool> {
    let row = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM accounts WHERE id = $1) AS "exists!""#,
        id
    )
    .fetch_one(pool)
    .await?;
    Ok(row)
}
