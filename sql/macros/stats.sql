-- Statistical functions DuckDB lacks, as temporary macros that evalwh.warehouse.queries defines
-- on a connection before it runs any named query (one definition serves every query in sql/).
-- Each is an expression of its arguments; none reads a table.

-- The 0.975 quantile of Student's t with df degrees of freedom (NULL below 1 df): exact values
-- (scipy.stats.t.ppf) for df 1..30; above 30 the Cornish-Fisher expansion in 1/df to the 4th
-- order (Abramowitz & Stegun 26.7.5), within 3.1e-8 of the exact quantile at df 31 and closer
-- above. In DOUBLE: df**4 overflows BIGINT past ~55,000 df.
CREATE OR REPLACE TEMP MACRO t_975(df) AS CASE
    WHEN df BETWEEN 1 AND 30 THEN
     [12.7062047361747, 4.30265272974946, 3.18244630528371, 2.77644510519779,
      2.57058183563631, 2.44691185114498, 2.36462425159278, 2.30600413520417,
      2.2621571627982, 2.22813885198627, 2.20098516009164, 2.17881282966723,
      2.16036865646279, 2.1447866879178, 2.13144954555978, 2.11990529922125,
      2.10981557783332, 2.10092204024104, 2.09302405440831, 2.08596344726586,
      2.07961384472768, 2.07387306790403, 2.06865761041905, 2.06389856162802,
      2.0595385527533, 2.05552943864287, 2.05183051648028, 2.04840714179525,
      2.0452296421327, 2.04227245630124][df]
    WHEN df > 30 THEN
     1.959963984540054 + 2.372271230298562 / df::DOUBLE
        + 2.8224986157396112 / pow(df::DOUBLE, 2)
        + 2.555849679507722 / pow(df::DOUBLE, 3)
        + 1.5895340533938225 / pow(df::DOUBLE, 4)
END;

-- erfc(x) for x >= 0 as 1 - erf(x), erf by its series of positive terms (A&S 7.1.6):
-- erf x = 2/sqrt(pi) e^(-x^2) sum_{n>=0} 2^n x^(2n+1) / (1*3*...*(2n+1)), each term through
-- lgamma; the terms past n = x^2 + 10x + 15 add less than 1e-17 (checked against mpmath up to
-- x = 9), and erfc(9) < 1e-36 is taken as 0.
-- Absolute error below 1e-13 (the sum of the terms rounds), which is all a p-value needs.
CREATE OR REPLACE TEMP MACRO erfc_series(x) AS list_transform([x::DOUBLE], v -> CASE
    WHEN v <= 0 THEN 1.0
    WHEN v > 9 THEN 0.0
    ELSE greatest(0.0, 1.0 - 2.0 / sqrt(pi()) * list_sum(list_transform(
        range(0, ceil(v * v + 10 * v + 15)::BIGINT),
        k -> exp(-v * v + k * ln(4.0) + lgamma(k + 1) + (2 * k + 1) * ln(v) - lgamma(2 * k + 2))
    )))
END)[1];

-- The two-sided p-value 2 * (1 - F_t(|t|; df)) of Student's t for a whole df >= 1 (NULL
-- below). For df <= 100 the closed forms of A&S 26.7.3 (odd df) and 26.7.4 (even df) in
-- theta = atan(|t| / sqrt(df)), a finite sum of powers of cos(theta) with coefficients through
-- lgamma; above 100 Hill's expansion (G. W. Hill 1970, Algorithm 395, CACM 13:617) of t into a
-- normal deviate z, with ln(1 + t^2/df) by its series below 1e-3, and p = erfc(z / sqrt 2).
-- Both agree with scipy.stats.t.sf to about 1e-13 (tests/sql/test_macros.py). A value
-- used more than once is bound once as the argument of a one-element list_transform.
CREATE OR REPLACE TEMP MACRO t_p(t, df) AS CASE
    WHEN df IS NULL OR df < 1 OR t IS NULL THEN NULL
    WHEN df <= 100 THEN list_transform([atan(abs(t) / sqrt(df))], th -> least(1.0, greatest(0.0,
        CASE WHEN df % 2 = 1
        THEN 1.0 - 2.0 / pi() * (th + sin(th) * coalesce(list_sum(list_transform(
            range(0, (df - 1) // 2),
            j -> exp(j * ln(4.0) + 2 * lgamma(j + 1) - lgamma(2 * j + 2)) * pow(cos(th), 2 * j + 1)
        )), 0.0))
        ELSE 1.0 - sin(th) * list_sum(list_transform(
            range(0, df // 2),
            k -> exp(lgamma(2 * k + 1) - 2 * lgamma(k + 1) - k * ln(4.0)) * pow(cos(th), 2 * k)
        ))
        END
    )))[1]
    ELSE list_transform(
        -- y = (df - 1/2) * ln(1 + t^2 / df), then Hill's z
        [[t * t / df, (df - 0.5), 48 * (df - 0.5) * (df - 0.5)]],
        u -> list_transform(
            [u[2] * CASE
                WHEN u[1] < 1e-3 THEN u[1] * (1 - u[1] * (0.5 - u[1] * (1.0 / 3 - u[1] / 4)))
                ELSE ln(1 + u[1])
            END],
            y -> erfc_series(
                (((((-0.4 * y - 3.3) * y - 24.0) * y - 85.5) / (0.8 * y * y + 100.0 + u[3])
                  + y + 3.0) / u[3] + 1.0) * sqrt(y) / sqrt(2.0)
            )
        )[1]
    )[1]
END;

-- The p-value of a paired mean difference `delta` with standard error `se` on `df` degrees of
-- freedom: t_p(delta / se, df). NULL when the standard error is (n = 1, one cluster: df 0);
-- with no spread at all (se = 0) 0 for a difference, 1 for none (t is infinite or undefined).
CREATE OR REPLACE TEMP MACRO paired_p(delta, se, df) AS CASE
    WHEN se IS NULL OR df IS NULL OR df < 1 OR delta IS NULL THEN NULL
    WHEN se = 0 THEN CASE WHEN delta = 0 THEN 1.0 ELSE 0.0 END
    ELSE t_p(delta / se, df)
END;

-- The 95% Wilson score interval of a proportion p over n (Wilson 1927), clamped to [0, 1]
-- (no -5e-17 at 0/n, no 1 + 2^-52 at n/n); NULL for n = 0.
CREATE OR REPLACE TEMP MACRO wilson_lo(p, n) AS CASE WHEN n > 0 THEN greatest(0.0,
    (p + 1.959963984540054 * 1.959963984540054 / (2 * n)
       - 1.959963984540054 * sqrt(p * (1 - p) / n + 1.959963984540054 * 1.959963984540054 / (4 * n * n)))
    / (1 + 1.959963984540054 * 1.959963984540054 / n)) END;
CREATE OR REPLACE TEMP MACRO wilson_hi(p, n) AS CASE WHEN n > 0 THEN least(1.0,
    (p + 1.959963984540054 * 1.959963984540054 / (2 * n)
       + 1.959963984540054 * sqrt(p * (1 - p) / n + 1.959963984540054 * 1.959963984540054 / (4 * n * n)))
    / (1 + 1.959963984540054 * 1.959963984540054 / n)) END;

-- The 95% interval of a pass rate p, the mean over n cases of each case's pass fraction (sd:
-- their sample standard deviation): Wilson when every fraction is 0 or 1 (`zero_one`: no repeats,
-- or repeats that agree), else the CLT interval on the case means, p -/+ t_975(n - 1) * sd /
-- sqrt(n) (Miller 2024, arXiv:2411.00640; inspect_ai's stderr), clamped to [0, 1]; NULL when it
-- is undefined (no case; one case with a fractional pass).
CREATE OR REPLACE TEMP MACRO case_rate_lo(p, sd, n, zero_one) AS CASE
    WHEN zero_one THEN wilson_lo(p, n)
    WHEN n > 1 THEN greatest(0.0, p - t_975(n - 1) * sd / sqrt(n))
END;
CREATE OR REPLACE TEMP MACRO case_rate_hi(p, sd, n, zero_one) AS CASE
    WHEN zero_one THEN wilson_hi(p, n)
    WHEN n > 1 THEN least(1.0, p + t_975(n - 1) * sd / sqrt(n))
END;
