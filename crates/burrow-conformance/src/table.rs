//! The one table of scenarios: a single list from which both [`SCENARIOS`] and each backend's generated tests are made.
//!
//! The list lives in the `__for_each_scenario!` macro below. It is expanded
//! here (mode `table`) into the `SCENARIOS` static, and in a backend's test
//! binary (mode `tests`, through [`conformance_suite!`](crate::conformance_suite))
//! into one `#[test]` per scenario. So the two cannot drift apart, and the
//! `conformance_table_complete` test and this crate's self-test catch a
//! scenario function that was written but never listed.

use futures::future::BoxFuture;

use burrow_backend::Backend;

use crate::fixture::Ctx;
use crate::outcome::Outcome;

/// One scenario: its name (the test name) and the function that runs it.
#[derive(Clone, Copy)]
pub struct Scenario {
    /// The scenario's function name, e.g. `edit_crlf_preserves_endings`.
    pub name: &'static str,
    /// The module of [`crate::scenarios`] it lives in, e.g. `crlf`.
    pub module: &'static str,
    /// Runs the scenario.
    pub run: for<'a> fn(&'a dyn Backend, &'a Ctx) -> BoxFuture<'a, Outcome>,
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scenario({}::{})", self.module, self.name)
    }
}

/// The scenario named `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// The list of scenarios, as `module::function` paths beneath [`crate::scenarios`].
///
/// Adding a scenario: write `pub async fn` in a module of `src/scenarios/`,
/// then add its path here. Nothing else.
#[doc(hidden)]
#[macro_export]
macro_rules! __for_each_scenario {
    ($mode:ident $($args:tt)*) => {
        $crate::__scenario_items! { $mode [$($args)*]
            ls::ls_root_exists_on_empty_backend
            ls::ls_lists_direct_children_only
            ls::ls_entry_fields
            ls::ls_size_is_byte_count
            ls::ls_sorted_by_byte_order
            ls::ls_of_file_is_not_a_directory
            ls::ls_of_missing_is_not_found
            ls::ls_prefix_sibling_is_not_a_child
            ls::ls_reports_modified_at
            read::read_line_split_table
            read::read_window_offset_and_limit
            read::read_offset_past_end_is_invalid_argument
            read::read_directory_is_a_directory
            read::read_missing_is_not_found
            read::read_has_no_side_effects
            write::write_creates_parent_directories
            write::write_replaces_whole_content
            write::write_returns_written_path
            write::write_over_directory_is_a_directory
            write::write_under_file_is_not_a_directory
            write::write_root_is_a_directory
            write::write_same_content_twice
            write::write_replace_moves_modified_at_forward
            write::write_replace_keeps_created_at
            edit::edit_replaces_single_occurrence
            edit::edit_replace_all_counts_every_occurrence
            edit::edit_counts_non_overlapping
            edit::edit_is_literal
            edit::edit_to_empty_and_no_final_newline
            edit::edit_empty_old_is_refused
            edit::edit_absent_old_is_refused
            edit::edit_old_equal_to_new_is_refused
            edit::edit_ambiguous_old_is_refused_with_count
            edit::edit_missing_is_not_found
            edit::edit_directory_is_a_directory
            edit::edit_multiline_in_lf_file
            edit::edit_unicode_text
            delete::delete_removes_file
            delete::delete_then_write_again
            delete::delete_missing_is_not_found
            delete::delete_root_is_invalid_path
            delete::delete_non_empty_directory_is_refused
            delete::delete_prefix_sibling_untouched
            delete::delete_last_file_removes_implicit_directories
            delete::delete_last_file_keeps_empty_directory
            delete::delete_empty_directory_still_blocks_files
            dirs::make_dir_is_listed_and_stays
            dirs::make_dir_parents
            dirs::make_dir_over_a_file_is_refused
            dirs::delete_tree_removes_everything_beneath
            dirs::delete_tree_of_a_file_or_subdirectory
            dirs::delete_tree_refusals_change_nothing
            dirs::delete_tree_removes_made_directories
            dirs::beneath_a_file_is_not_found
            glob::glob_bare_pattern_matches_any_depth
            glob::glob_slash_anchors_pattern
            glob::glob_double_star_spans_segments
            glob::glob_single_character_classes
            glob::glob_alternation
            glob::glob_dotfiles_match
            glob::glob_returns_files_only
            glob::glob_sorted_by_full_path
            glob::glob_entry_fields
            glob::glob_is_relative_to_under
            glob::glob_under_excludes_prefix_siblings
            glob::glob_climbing_pattern_is_invalid_path
            glob::glob_malformed_pattern_is_invalid_argument
            glob::glob_missing_under_is_empty
            glob::glob_under_file_is_not_a_directory
            glob::glob_is_case_sensitive
            glob::glob_escaped_metacharacters
            grep::grep_regex_matches_whole_lines
            grep::grep_fixed_strings_are_literal
            grep::grep_ignore_case_folds_case
            grep::grep_bad_regex_is_invalid_argument
            grep::grep_pattern_length_limit
            grep::grep_include_filters_like_glob
            grep::grep_bad_include_is_refused
            grep::grep_results_in_path_then_line_order
            grep::grep_line_numbers_are_read_offsets
            grep::grep_sees_read_lines_exactly
            grep::grep_pattern_never_spans_lines
            grep::grep_missing_under_is_empty
            grep::grep_under_a_file_searches_it
            grep::grep_under_excludes_prefix_siblings
            grep::grep_searches_hidden_files
            grep::grep_and_glob_ignore_no_ignore_files
            grep::grep_empty_matching_patterns_match_every_line
            paths::paths_hostile_names_write_and_read
            paths::paths_hostile_names_listed_exactly
            paths::paths_hostile_names_edit_and_delete
            paths::paths_hostile_names_as_directories
            paths::paths_case_sensitive
            paths::paths_no_unicode_normalisation
            paths::paths_long_names_and_deep_paths
            paths::paths_normalised_spellings_are_one_file
            paths::paths_vpath_parsing_rules
            crlf::crlf_read_strips_cr_keeps_bytes
            crlf::crlf_lone_cr_is_not_a_line_break
            crlf::edit_crlf_preserves_endings
            crlf::edit_crlf_accepts_either_ending_in_old
            crlf::edit_crlf_replace_all
            crlf::edit_mixed_endings_match_literally
            crlf::grep_crlf_lines_have_no_cr
            crlf::edit_new_takes_the_files_line_ending
            crlf::edit_equal_once_normalised_is_refused
            content::empty_file_reads_zero_lines
            content::empty_file_is_listed_with_size_zero
            content::empty_file_grep_finds_nothing
            content::empty_file_edit_is_refused
            content::binary_read_bytes_is_exact
            content::binary_read_is_not_text
            content::binary_grep_skips_non_text
            content::binary_edit_is_not_text
            content::nul_text_reads_as_text
            content::unicode_text_round_trips
            content::unicode_bom_is_content
            limits::limits_ls_truncation
            limits::limits_glob_truncation
            limits::limits_grep_truncation
            limits::limits_read_truncation
            limits::limits_filter_before_limit
            limits::limits_huge_limit_is_fine
            limits::limits_max_results_caps_every_listing
            limits::limits_file_at_max_size_is_accepted
            limits::limits_write_past_max_size_is_too_large
            limits::limits_edit_past_max_size_is_too_large
            limits::limits_read_past_max_size_is_too_large
            concurrency::concurrency_edits_lose_no_update
            concurrency::concurrency_replace_all_edits_all_land
            concurrency::concurrency_writes_create_every_file
            concurrency::concurrency_deletes_and_writes_interleave
            concurrency::concurrency_delete_tree_excludes_changes_beneath
            meta::capabilities_are_constant
            meta::locks_same_path_share_a_key
            meta::errors_name_virtual_paths_only
            tenants::tenants_read_looks_missing
            tenants::tenants_ls_looks_missing
            tenants::tenants_glob_and_grep_see_nothing
            tenants::tenants_mutations_look_missing
            tenants::tenants_same_path_is_independent
            replay::replay_write_same_key_applies_once
            replay::replay_different_key_applies_again
            replay::replay_edit_returns_recorded_outcome
            replay::replay_delete_returns_recorded_outcome
            replay::replay_keys_are_per_tenant
            sandbox::sandbox_exit_codes
            sandbox::sandbox_output_interleaves_stderr
            sandbox::sandbox_output_is_capped
            sandbox::sandbox_flood_stays_bounded
            sandbox::sandbox_timeout_exits_124_with_note
            sandbox::sandbox_timeout_kills_background_children
            sandbox::sandbox_cwd_is_the_workspace
            sandbox::sandbox_command_files_are_visible
            sandbox::sandbox_fifo_is_never_opened
            host::symlinks_leading_out_are_refused
            host::symlinks_climbing_relative_link_is_refused
            host::host_fifo_is_never_opened
        }
    };
}

/// Expands the scenario list in one of two modes: `table` or `tests`.
#[doc(hidden)]
#[macro_export]
macro_rules! __scenario_items {
    (table [] $($module:ident :: $name:ident)*) => {
        /// Every scenario of the suite, in table order.
        pub static SCENARIOS: &[$crate::Scenario] = &[
            $(
                $crate::Scenario {
                    name: ::core::stringify!($name),
                    module: ::core::stringify!($module),
                    run: |b, cx| ::std::boxed::Box::pin($crate::scenarios::$module::$name(b, cx)),
                },
            )*
        ];
    };
    (tests [$test:ident] $($module:ident :: $name:ident)*) => {
        $( $test! { $name } )*
    };
    (names [] $($module:ident :: $name:ident)*) => {
        [$(::core::stringify!($name)),*]
    };
}

crate::__for_each_scenario! { table }
